//! A run's progress on a terminal: the bar, the runs done, the time left.

use std::time::Duration;

use crate::plan::{Plan, Run};

/// The time the runs not yet measured take: once `done` of `total` runs have been
/// measured in `elapsed`, their pace predicts the rest better than the plan's estimate
/// does.
pub fn left(plan: &Plan, done: usize, total: usize, elapsed: Duration) -> Duration {
    if done > 0 {
        elapsed.mul_f64((total - done) as f64 / done as f64)
    } else {
        Duration::from_nanos(plan.estimated(total - done).as_nanos())
    }
}

/// What `run` measures, for a progress line: `size=512 · IPv6 · repetition 1/15`.
pub fn what(plan: &Plan, run: &Run) -> String {
    format!(
        "{} · IPv{} · repetition {}/{}",
        plan.points[run.point].id, run.family, run.repetition, plan.repetitions
    )
}

/// `[#######.................]  12/46  size=512 · IPv6 · repetition 1/15  ETA 0:35`.
pub fn bar(done: usize, total: usize, what: &str, left: Duration, width: usize) -> String {
    let filled = (done * width)
        .checked_div(total)
        .unwrap_or(width)
        .min(width);
    format!(
        "[{}{}] {:>w$}/{total}  {what}  ETA {}",
        "#".repeat(filled),
        ".".repeat(width - filled),
        done + 1,
        clock(left),
        w = total.to_string().len()
    )
}

/// `1:02:03`, `2:03`, `0:07`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_bar_fills_with_the_runs_done() {
        assert_eq!(
            bar(0, 4, "size=64 · IPv4", Duration::from_secs(7), 8),
            "[........] 1/4  size=64 · IPv4  ETA 0:07"
        );
        assert_eq!(
            bar(23, 46, "p", Duration::from_secs(3725), 10),
            "[#####.....] 24/46  p  ETA 1:02:05"
        );
        assert_eq!(clock(Duration::from_millis(59_600)), "1:00");
    }

    #[test]
    fn the_time_left_is_the_plans_estimate_then_the_pace_of_the_runs_done() {
        let text = "version = 1\nname = \"x\"\nduration = \"1s\"\nrepetitions = 2\n\n\
                    [flow]\nudp = true\n\n[factors]\nip = [4, 6]\nsize = [64]\n";
        let plan = Plan::parse(text, false).unwrap();
        assert_eq!(plan.runs.len(), 4);
        // Nothing measured yet: the plan's estimate, 1 s and 0.7 s of overhead a run.
        assert_eq!(
            left(&plan, 0, 4, Duration::from_secs(9)),
            Duration::from_millis(6_800)
        );
        // Three measured in 6 s: 2 s a run.
        assert_eq!(
            left(&plan, 3, 4, Duration::from_secs(6)),
            Duration::from_secs(2)
        );
        assert_eq!(left(&plan, 4, 4, Duration::from_secs(6)), Duration::ZERO);
        let run = plan
            .runs
            .iter()
            .find(|r| r.family == 6 && r.repetition == 2)
            .unwrap();
        assert_eq!(what(&plan, run), "size=64 · IPv6 · repetition 2/2");
    }
}
