//! Readers run while one writer inserts, and only ever see whole transactions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use evolution_types::RunLog;
use serde_json::json;

use crate::{fresh_log, step};

const BATCHES: u32 = 30;
const STEPS_PER_BATCH: u32 = 100;
const READERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn readers_see_whole_batches_while_a_writer_inserts() {
    let (_dir, log) = fresh_log();
    log.create_run("r1", json!({})).await.unwrap();
    let done = Arc::new(AtomicBool::new(false));

    let mut readers = Vec::new();
    for _ in 0..READERS {
        let log = log.clone();
        let done = Arc::clone(&done);
        readers.push(tokio::spawn(async move {
            let (mut reads, mut last, mut saw_partial_progress) = (0_u32, 0_usize, false);
            loop {
                let finished = done.load(Ordering::Acquire);
                let traces = log.get_traces("r1", None).await.unwrap();
                let n = traces.len();
                // Each batch is one transaction: a reader sees whole batches only, never fewer
                // rows than it saw before.
                assert_eq!(
                    n % STEPS_PER_BATCH as usize,
                    0,
                    "partial batch visible: {n} rows"
                );
                assert!(n >= last, "rows went from {last} to {n}");
                if n > 0 && n < (BATCHES * STEPS_PER_BATCH) as usize {
                    saw_partial_progress = true;
                }
                last = n;
                reads += 1;
                if finished {
                    return (reads, last, saw_partial_progress);
                }
            }
        }));
    }

    let writer = {
        let log = log.clone();
        tokio::spawn(async move {
            for batch in 0..BATCHES {
                let question = format!("q{batch:03}");
                let steps = (1..=STEPS_PER_BATCH).map(|s| step(&question, s)).collect();
                log.insert_traces("r1", steps).await.unwrap();
            }
        })
    };
    writer.await.unwrap();
    done.store(true, Ordering::Release);

    let mut overlapped = 0;
    for reader in readers {
        let (reads, last, saw_progress) = reader.await.unwrap();
        assert!(reads > 0);
        assert_eq!(last, (BATCHES * STEPS_PER_BATCH) as usize);
        overlapped += usize::from(saw_progress);
    }
    // At least one reader observed the log mid-way, so reads did overlap the writes.
    assert!(overlapped > 0, "no read overlapped the writer");
}
