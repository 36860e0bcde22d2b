//! Why a plan's runs failed, for people: each distinct reason once, with how many runs
//! it hit and which, taken from what the failed runs recorded (the sender's exit code
//! and stderr), so a console never says only "see their stderr".

/// One failed run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Its place in the plan's order of runs, from 1 (as the progress counts them).
    pub number: usize,
    /// Its id (`rep001-POINT-ipv4`, its record kept as `runs/ID.failed`).
    pub id: String,
    /// Why, in one line ([`reason`]).
    pub reason: String,
}

/// The reason a failed run's sender gave: its last error line (`dualperf: error: …`,
/// the prefix left out), else its last line on stderr, else its exit code. A sender
/// that did not exit by itself (`exit_code` -1) was killed.
pub fn reason(exit_code: i32, stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let error = lines
        .iter()
        .rev()
        .find_map(|l| l.split_once("error: ").map(|(_, why)| why.trim()))
        .filter(|why| !why.is_empty());
    if let Some(why) = error.or_else(|| lines.last().copied()) {
        return why.to_owned();
    }
    if exit_code == -1 {
        "the sender did not exit by itself (killed after its duration and margin, or by a signal), saying nothing".into()
    } else {
        format!("the sender exited {exit_code} and said nothing on stderr")
    }
}

/// One line per distinct reason, the most frequent first (then by first run): `N of
/// TOTAL runs failed: REASON (runs 1–3, 7: ID, ID, …, ID)`, where `total` is the
/// number of runs attempted.
pub fn summary(failures: &[Failure], total: usize) -> Vec<String> {
    let mut reasons: Vec<(&str, Vec<&Failure>)> = Vec::new();
    for f in failures {
        match reasons.iter_mut().find(|(r, _)| *r == f.reason) {
            Some((_, hit)) => hit.push(f),
            None => reasons.push((&f.reason, vec![f])),
        }
    }
    reasons.sort_by_key(|(_, hit)| std::cmp::Reverse(hit.len()));
    reasons
        .into_iter()
        .map(|(reason, mut hit)| {
            hit.sort_by_key(|f| f.number);
            let numbers: Vec<usize> = hit.iter().map(|f| f.number).collect();
            let ids: Vec<&str> = hit.iter().map(|f| f.id.as_str()).collect();
            let ids = match ids.len() {
                0..=3 => ids.join(", "),
                n => format!("{}, {}, …, {}", ids[0], ids[1], ids[n - 1]),
            };
            format!(
                "{} of {total} runs failed: {reason} (run{} {}: {ids})",
                hit.len(),
                if hit.len() == 1 { "" } else { "s" },
                ranges(&numbers)
            )
        })
        .collect()
}

/// Sorted numbers as ranges: `1–3, 7, 9–10`.
fn ranges(numbers: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let start = numbers[i];
        let mut end = start;
        while i + 1 < numbers.len() && numbers[i + 1] == end + 1 {
            i += 1;
            end = numbers[i];
        }
        out.push(if end == start {
            start.to_string()
        } else {
            format!("{start}–{end}")
        });
        i += 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_is_the_senders_error_line_or_what_it_said_last() {
        let refused = "dualperf send: note: x\ndualperf: error: agent refused: destination 198.18.4.2 is outside --allow: this agent may send to only the asker's own address (no --allow given)\n";
        assert_eq!(
            reason(1, refused),
            "agent refused: destination 198.18.4.2 is outside --allow: this agent may send to only the asker's own address (no --allow given)"
        );
        // No error line: the last thing said (the runner's own note about the report).
        assert_eq!(
            reason(
                0,
                "warning: a\n\ndualperf run: the sender's report does not read: EOF\n\n"
            ),
            "dualperf run: the sender's report does not read: EOF"
        );
        assert_eq!(
            reason(3, ""),
            "the sender exited 3 and said nothing on stderr"
        );
        assert!(reason(-1, " \n").starts_with("the sender did not exit by itself"));
    }

    fn failed(number: usize, id: &str, reason: &str) -> Failure {
        Failure {
            number,
            id: id.into(),
            reason: reason.into(),
        }
    }

    #[test]
    fn each_reason_is_named_once_with_its_count_and_runs() {
        let refused = "agent refused: destination 198.18.4.2 is outside --allow";
        let all: Vec<Failure> = (1..=12)
            .map(|n| failed(n, &format!("r{n:02}"), refused))
            .collect();
        assert_eq!(
            summary(&all, 12),
            [format!(
                "12 of 12 runs failed: {refused} (runs 1–12: r01, r02, …, r12)"
            )]
        );
        let mixed = [
            failed(9, "r09", "timeout"),
            failed(2, "r02", refused),
            failed(3, "r03", refused),
            failed(7, "r07", refused),
            failed(5, "r05", "timeout"),
            failed(11, "r11", "refused by the receiver"),
        ];
        assert_eq!(
            summary(&mixed, 12),
            [
                format!("3 of 12 runs failed: {refused} (runs 2–3, 7: r02, r03, r07)"),
                "2 of 12 runs failed: timeout (runs 5, 9: r05, r09)".to_owned(),
                "1 of 12 runs failed: refused by the receiver (run 11: r11)".to_owned(),
            ]
        );
        assert!(summary(&[], 4).is_empty());
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1–3, 5, 7–8");
        assert_eq!(ranges(&[4]), "4");
    }
}
