//! A record of tests that outlives one run: the hook through which a
//! [`Gatekeeper`](crate::Gatekeeper) takes each candidate's level from, and
//! reports its outcome to, a ledger kept by its caller (a project keeps one
//! per skill file, across every run and session that gates it).
//!
//! The gatekeeper asks the ledger for a test before it spends a rollout
//! ([`TestLedger::open`]): the level the ledger's e-LOND gives the candidate,
//! and the gate questions it must not use. The candidate then needs both the
//! run's threshold and the ledger's, so both false-discovery-rate bounds hold.
//! Once decided, the outcome is reported ([`TestLedger::close`]). Both calls
//! must be idempotent per candidate label: a resumed run opens and closes the
//! same candidate again and must get the same level back.

use std::collections::BTreeSet;

use evolution_gate::GateDecision;
use serde::{Deserialize, Serialize};

use crate::fdr::TestLevel;

/// A ledger's test of one candidate, as [`TestLedger::open`] hands it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerTest {
    /// The level the ledger gives the candidate (its `index` counted over the ledger).
    pub level: TestLevel,
    /// Gate questions the candidate must not be gated on (they accepted an earlier
    /// version of a document it writes).
    pub excluded: BTreeSet<String>,
}

/// How a ledger's test ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LedgerOutcome {
    /// The gate's final e-value, `None` when the candidate was not gated (its level was
    /// zero, or no gate question was left).
    pub e_value: Option<f64>,
    /// The gate's decision, when it was gated.
    pub decision: Option<GateDecision>,
    /// Whether the candidate was accepted: a discovery of the ledger.
    pub accepted: bool,
    /// The gate questions the gate paired, in id order.
    pub questions: Vec<String>,
}

/// Why a ledger could not give or record a test.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the ledger: {message}")]
pub struct LedgerError {
    /// What went wrong, naming the ledger's file when there is one.
    pub message: String,
}

/// A ledger of tests kept beyond one run (see the module's documentation).
pub trait TestLedger: Send + Sync {
    /// The test of candidate `candidate` writing the documents `documents`: `None` when no
    /// document it writes has a ledger. Opening a candidate already opened returns the
    /// same test.
    ///
    /// # Errors
    /// A ledger that cannot be read or written.
    fn open(
        &self,
        candidate: &str,
        documents: &[String],
    ) -> Result<Option<LedgerTest>, LedgerError>;

    /// Records how the test of `candidate` ended; recording it again replaces it.
    ///
    /// # Errors
    /// A ledger that cannot be read or written.
    fn close(
        &self,
        candidate: &str,
        documents: &[String],
        outcome: &LedgerOutcome,
    ) -> Result<(), LedgerError>;
}
