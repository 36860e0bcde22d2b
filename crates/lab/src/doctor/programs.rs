//! The programs the host check asks or looks for: `chronyc -c tracking` (chrony's view
//! of the clock, read with a timeout, since it waits for an absent daemon) and `ip` on
//! `PATH`. Nothing here fails: what cannot be run or read is `None`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use results::clock::ChronyTracking;

/// How long `chronyc` may take before it is killed (it waits for an absent daemon).
const CHRONYC_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the wait for `chronyc` looks whether it has exited.
const CHRONYC_POLL: Duration = Duration::from_millis(10);
/// At most this much of `chronyc`'s output is read (a tracking line is ~150 bytes).
const CHRONYC_MAX_OUTPUT: u64 = 64 * 1024;
/// Fields of a `chronyc -c tracking` line after the name (stratum … leap status).
const TRACKING_TAIL_FIELDS: usize = 12;

/// chrony's tracking: `None` without `chronyc` on `PATH`, or when it fails, prints no
/// tracking line, or takes over 2 s.
pub fn chrony_tracking() -> Option<ChronyTracking> {
    find_on_path("chronyc")
        .and_then(|chronyc| run_with_timeout(&chronyc, &["-c", "tracking"], CHRONYC_TIMEOUT))
        .and_then(|out| out.lines().find_map(parse_chrony_tracking_csv))
}

/// Parses one line of `chronyc -c tracking`; `None` unless it is one, never panics.
///
/// The 14 comma-separated fields, in the order chrony's `client.c`
/// (`process_cmd_tracking`, the same since CSV output came in 2.4) prints them:
///
/// | # | field | CSV form | kept as |
/// |---|---|---|---|
/// | 0 | Reference ID | 8 hex digits | `reference`, "ID (name)" like `chronyc tracking` |
/// | 1 | name or address | text (no DNS in CSV mode) | `reference` |
/// | 2 | Stratum | integer | `stratum` |
/// | 3 | Ref time | seconds since the epoch | checked only |
/// | 4 | System time | signed seconds, **positive = slow** | `system_time_offset_ns`, negated |
/// | 5 | Last offset | signed seconds, positive = ahead | `last_offset_ns` |
/// | 6 | RMS offset | seconds | `rms_offset_ns` |
/// | 7 | Frequency | signed ppm, positive = slow | checked only |
/// | 8 | Residual freq | signed ppm | checked only |
/// | 9 | Skew | ppm | checked only |
/// | 10 | Root delay | seconds | `root_delay_ns` |
/// | 11 | Root dispersion | seconds | `root_dispersion_ns` |
/// | 12 | Update interval | seconds | checked only |
/// | 13 | Leap status | "Normal", "Insert second", … | `leap_status` |
///
/// "System time" is chrony's `current_correction`, the correction still to be applied
/// to the system clock: `chronyc tracking` prints a positive value as "slow of NTP
/// time" and a negative one as "fast". [`ChronyTracking::system_time_offset_ns`] is
/// positive when the clock is fast, so the sign is flipped.
///
/// A refclock's name is its reference ID as text and may hold a comma, so the name is
/// whatever lies between the first field and the last twelve.
pub fn parse_chrony_tracking_csv(line: &str) -> Option<ChronyTracking> {
    let fields: Vec<&str> = line.trim().split(',').collect();
    if fields.len() < 2 + TRACKING_TAIL_FIELDS {
        return None;
    }
    let (head, tail) = fields.split_at(fields.len() - TRACKING_TAIL_FIELDS);
    let ref_id = head[0].trim();
    if ref_id.is_empty() || !ref_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let name = head[1..].join(",");
    let name = name.trim();
    let number = |i: usize| -> Option<f64> {
        let v: f64 = tail[i].trim().parse().ok()?;
        v.is_finite().then_some(v)
    };
    let ns = |i: usize| -> Option<f64> {
        let v = number(i)? * 1e9;
        v.is_finite().then_some(v)
    };
    let stratum = tail[0].trim().parse::<u32>().ok()?;
    // Checked so that a line of another shape is refused, not kept.
    for i in [1, 5, 6, 7, 10] {
        number(i)?;
    }
    let leap_status = tail[11].trim();
    if leap_status.is_empty() {
        return None;
    }
    Some(ChronyTracking {
        reference: if name.is_empty() {
            ref_id.to_owned()
        } else {
            format!("{ref_id} ({name})")
        },
        stratum,
        // Positive in CSV = slow; positive here = fast. `0.0 - x`, so 0 stays +0.
        system_time_offset_ns: 0.0 - ns(2)?,
        last_offset_ns: ns(3)?,
        rms_offset_ns: ns(4)?,
        root_delay_ns: ns(8)?,
        root_dispersion_ns: ns(9)?,
        leap_status: leap_status.to_owned(),
    })
}

/// The first executable file `name` in the directories of `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|file| {
            std::fs::metadata(file)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Runs `program` with `args` and returns its standard output if it exits successfully
/// within `timeout`; kills it otherwise. `None` on any failure.
fn run_with_timeout(program: &Path, args: &[&str], timeout: Duration) -> Option<String> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < timeout => std::thread::sleep(CHRONYC_POLL),
            Ok(None) | Err(_) => break None,
        }
    };
    let Some(status) = status else {
        // Best effort: it may have exited just now; `wait` reaps it either way.
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    if !status.success() {
        return None;
    }
    // It has exited: the pipe holds all it wrote (more than the pipe's buffer would
    // have blocked it, and it would have been killed above).
    let mut out = Vec::new();
    child
        .stdout
        .take()?
        .take(CHRONYC_MAX_OUTPUT)
        .read_to_end(&mut out)
        .ok()?;
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of chrony's documentation of `tracking` (doc/chronyc.adoc), as
    /// `chronyc -c tracking` prints it: "Fri Jan 27 09:49:17 2017" is 1485510557,
    /// "0.000006523 seconds slow" is +0.000006523 and "3.225 ppm slow" is -3.225.
    const DOC_SAMPLE: &str = "CB00710F,ntp1.example.net,3,1485510557.000000000,0.000006523,\
        -0.000006747,0.000035822,-3.225,-0.000,0.129,0.013639022,0.001100737,64.2,Normal\n";

    #[test]
    fn parses_the_documented_tracking_line() {
        let t = parse_chrony_tracking_csv(DOC_SAMPLE).expect("tracking line");
        assert_eq!(t.reference, "CB00710F (ntp1.example.net)");
        assert_eq!(t.stratum, 3);
        // Slow by 6.523 µs: negative.
        assert!((t.system_time_offset_ns + 6_523.0).abs() < 1e-3, "{t:?}");
        assert!((t.last_offset_ns + 6_747.0).abs() < 1e-3, "{t:?}");
        assert!((t.rms_offset_ns - 35_822.0).abs() < 1e-3, "{t:?}");
        assert!((t.root_delay_ns - 13_639_022.0).abs() < 1e-3, "{t:?}");
        assert!((t.root_dispersion_ns - 1_100_737.0).abs() < 1e-3, "{t:?}");
        assert_eq!(t.leap_status, "Normal");
    }

    #[test]
    fn a_fast_clock_is_positive() {
        let line = DOC_SAMPLE.replacen(",0.000006523,", ",-0.000000500,", 1);
        let t = parse_chrony_tracking_csv(&line).unwrap();
        assert!((t.system_time_offset_ns - 500.0).abs() < 1e-6, "{t:?}");
    }

    #[test]
    fn parses_an_unsynchronised_line_and_a_refclock_name_with_a_comma() {
        let t = parse_chrony_tracking_csv(
            "00000000,,0,0.000000000,0.000000000,0.000000000,0.000000000,0.000,0.000,\
             0.000,0.000000000,0.000000000,0.0,Not synchronised",
        )
        .unwrap();
        assert_eq!((t.reference.as_str(), t.stratum), ("00000000", 0));
        assert_eq!(t.leap_status, "Not synchronised");
        assert_eq!(t.system_time_offset_ns, 0.0);
        let t = parse_chrony_tracking_csv(
            "47502C53,GP,S,1,1485510557.5,0,0,0,0,0,0,0.000001,0.000002,16.0,Insert second",
        )
        .unwrap();
        assert_eq!(t.reference, "47502C53 (GP,S)");
        assert_eq!(t.leap_status, "Insert second");
    }

    #[test]
    fn refuses_junk_without_panicking() {
        let fields: Vec<&str> = DOC_SAMPLE.trim().split(',').collect();
        let with = |i: usize, v: &str| {
            let mut f = fields.clone();
            f[i] = v;
            f.join(",")
        };
        let mut junk = vec![
            String::new(),
            ",".into(),
            ",,,,,,,,,,,,,".into(),
            "506 Cannot talk to daemon".into(),
            fields[..13].join(","),
            fields[1..].join(","),
            "\u{0}\u{ffff},é,💥".into(),
            "x".repeat(100_000),
            ",".repeat(100_000),
        ];
        for i in 2..13 {
            junk.push(with(i, "abc"));
            junk.push(with(i, ""));
            junk.push(with(i, "NaN"));
            junk.push(with(i, "inf"));
            junk.push(with(i, "1e400"));
        }
        junk.push(with(0, "NOTHEX"));
        junk.push(with(0, ""));
        junk.push(with(2, "-1"));
        junk.push(with(2, "99999999999999999999"));
        junk.push(with(13, ""));
        for line in &junk {
            assert_eq!(parse_chrony_tracking_csv(line), None, "{line:.80}");
        }
        // Huge but finite seconds that overflow once in ns.
        assert_eq!(parse_chrony_tracking_csv(&with(4, "1e300")), None);
        assert!(parse_chrony_tracking_csv(&with(4, "1e200")).is_some());
    }

    #[test]
    fn finds_programs_on_path_and_times_them_out() {
        let sh = find_on_path("sh").expect("sh on PATH");
        assert!(sh.is_absolute() || sh.exists());
        assert_eq!(find_on_path("dualperf-no-such-program-here"), None);
        assert_eq!(
            run_with_timeout(&sh, &["-c", "echo hi"], Duration::from_secs(5)).as_deref(),
            Some("hi\n")
        );
        assert_eq!(
            run_with_timeout(&sh, &["-c", "exit 3"], Duration::from_secs(5)),
            None
        );
        let started = Instant::now();
        assert_eq!(
            run_with_timeout(&sh, &["-c", "sleep 10"], Duration::from_millis(200)),
            None
        );
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
