use evolution_diagnose::extract_json_from_response;
use serde_json::Value;

#[test]
fn yardstick_cases() {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("../data/json_repair_object_cases.json")).unwrap();
    let mut failed = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let input = case["input"].as_str().unwrap();
        let got = extract_json_from_response(input).map(Value::Object);
        if got.as_ref().ok() != Some(&case["expect"]) {
            failed.push(format!("{i}: {input:?} => {got:?}"));
        }
    }
    eprintln!(
        "passed {}/{}\n{}",
        cases.len() - failed.len(),
        cases.len(),
        failed.join("\n")
    );
    assert!(failed.len() < 1000);
}
