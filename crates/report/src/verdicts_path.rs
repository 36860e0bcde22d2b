//! What the verdict layer does with the path (`DIR/path.json`, read into
//! [`crate::load::Provenance::path`]): a point whose packets fragment over a family, or
//! that offers more than the path carries, is shown but not compared
//! (`results::compare::Caveat`, found by `lab::plan::fit::caveats`), and the summary
//! says in one sentence which points and why; TCP bulk, which fills the path by design,
//! is compared, and the summary names the header effect it is expected to show.

use lab::plan::fit::PathLimits;
use results::compare::{Caveat, CompareReport, Point};
use results::send::FlowOutcome;

/// Why the point whose runs send `flow` is not compared on `path`; none when the path
/// is not known.
pub fn caveats(flow: &FlowOutcome, path: Option<&PathLimits>) -> Vec<Caveat> {
    path.map_or_else(Vec::new, |p| lab::plan::fit::caveats(&flow.spec, 1, p))
}

/// A row's mark: its caveats' marks, each once (`fragments over IPv6, oversubscribed`).
pub fn marks(caveats: &[Caveat]) -> String {
    let mut out: Vec<String> = Vec::new();
    for m in caveats.iter().map(Caveat::mark) {
        if !out.contains(&m) {
            out.push(m);
        }
    }
    out.join(", ")
}

/// The summary's sentence on the points not compared: which, each with its mark, and
/// why; `None` when every point is compared.
pub fn not_compared(r: &CompareReport) -> Option<String> {
    let held: Vec<&Point> = r.points.iter().filter(|p| !p.caveats.is_empty()).collect();
    if held.is_empty() {
        return None;
    }
    let any = |f: fn(&Caveat) -> bool| held.iter().flat_map(|p| &p.caveats).any(f);
    let fragments = any(|c| matches!(c, Caveat::Fragments { .. }));
    let queue = any(|c| matches!(c, Caveat::Oversubscribed { .. }));
    let whose = match (fragments, queue) {
        (true, true) => "fragmentation's and the queue's",
        (true, false) => "fragmentation's",
        _ => "the bottleneck queue's",
    };
    let list: Vec<String> = held
        .iter()
        .map(|p| format!("{} ({})", p.name, marks(&p.caveats)))
        .collect();
    Some(format!(
        "Not compared (‡), {} of {} points: {}; their differences are {whose}, not IPv6's.",
        held.len(),
        r.points.len(),
        list.join(", ")
    ))
}

/// The summary's sentence on TCP bulk points, which fill the path by design: their
/// throughput compares each family's goodput at capacity, where IPv6's 20 more bytes of
/// header per segment are expected to make it lower by
/// [`lab::plan::fit::bulk_tcp_expectation`]; `None` without such a point or a path.
pub fn bulk_tcp(r: &CompareReport, path: Option<&PathLimits>) -> Option<String> {
    let expected = lab::plan::fit::bulk_tcp_expectation(path?)?;
    let bulk = r.points.iter().any(|p| {
        p.runs
            .iter()
            .flat_map(|rep| [&rep.ipv4, &rep.ipv6])
            .flatten()
            .any(|s| lab::plan::fit::fills_the_path(&s.flow.spec))
    });
    bulk.then(|| {
        format!(
            "TCP bulk fills the path by design: its throughput compares each family's goodput at capacity, where IPv6's 20 more bytes of header per segment are expected to make it {:.1} % lower, a real effect of the headers.",
            -expected
        )
    })
}
