//! Arbitrary text as an experiment plan: parsing and expansion never panic, every run
//! names a point that exists, run ids are unique, and every declared table holds a point.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for quick in [false, true] {
        let Ok(plan) = lab::plan::Plan::parse(text, quick) else {
            continue;
        };
        let mut ids = std::collections::HashSet::new();
        for run in &plan.runs {
            assert!(run.point < plan.points.len());
            assert!(ids.insert(run.id.clone()), "duplicate run id {}", run.id);
        }
        for point in &plan.points {
            let _ = point.args();
        }
        // Every table the plan declares holds at least one point.
        for table in &plan.tables {
            assert!(plan.points.iter().any(|p| table.holds(&p.factors)));
            assert!(!table.metrics.is_empty());
        }
    }
});
