//! Arbitrary text as a mesh campaign's file: parsing never panics, and what parses
//! expands to runs whose keys are all distinct.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(mesh) = lab::mesh::Mesh::parse(text) else {
        return;
    };
    // Bounded: a fuzzed mesh of many agents and rounds would expand to millions of runs.
    if mesh.agents.len() > 8 || mesh.rounds > 4 || mesh.tests.len() > 4 {
        return;
    }
    let work = mesh.work();
    let keys: std::collections::BTreeSet<_> = work
        .iter()
        .map(|w| (w.round, &w.src, &w.dst, w.family, &w.test))
        .collect();
    assert_eq!(keys.len(), work.len());
});
