//! A run's progress on a terminal: the bar, the runs done, the time left.

/// `[#######.................]  12/46  size=512 · IPv6 · repetition 1/15  ETA 0:35`.
pub fn bar(
    done: usize,
    total: usize,
    what: &str,
    left: std::time::Duration,
    width: usize,
) -> String {
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
pub fn clock(d: std::time::Duration) -> String {
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
    use std::time::Duration;

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
}
