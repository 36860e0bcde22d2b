//! A real PostgreSQL for the tests: an unprivileged cluster in a temporary directory
//! (Debian's `postgresql` package, which CI installs), on a free port of 127.0.0.1 or,
//! for a lab, of an address given. As root the server runs as `nobody` (PostgreSQL
//! refuses root). Stopped and removed when dropped, even when the test fails.

use std::path::PathBuf;
use std::process::Command;

use crate::support::path_str;

pub(crate) struct PgCluster {
    /// Under /tmp, which `nobody` can reach (the target directory may not be).
    dir: PathBuf,
    as_user: Vec<String>,
    pg_ctl: PathBuf,
    /// postgresql://dualperf@HOST:PORT/postgres
    pub(crate) url: String,
}

/// The newest installed PostgreSQL's program `name`.
fn pg_bin(name: &str) -> Option<PathBuf> {
    let mut bins: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("bin").join(name))
        .filter(|p| p.exists())
        .collect();
    bins.sort_by_key(|p| {
        p.components()
            .nth(4)
            .and_then(|c| c.as_os_str().to_str()?.parse::<u32>().ok())
    });
    bins.pop()
}

impl PgCluster {
    /// A running cluster listening on 127.0.0.1, or `None` (said) where PostgreSQL is
    /// not installed; under `CI=true` that is a failure.
    pub(crate) fn start(tag: &str) -> Option<Self> {
        Self::start_on(tag, "127.0.0.1")
    }

    /// As [`Self::start`], inside network namespace `netns` on `addr`, port 5432.
    pub(crate) fn start_in(tag: &str, netns: &str, addr: &str) -> Option<Self> {
        Self::start_with(tag, Some(netns), addr)
    }

    fn start_on(tag: &str, addr: &str) -> Option<Self> {
        Self::start_with(tag, None, addr)
    }

    fn start_with(tag: &str, netns: Option<&str>, addr: &str) -> Option<Self> {
        let (Some(initdb), Some(pg_ctl)) = (pg_bin("initdb"), pg_bin("pg_ctl")) else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "under CI=true this test must run: PostgreSQL (Debian's postgresql) is missing"
            );
            eprintln!("skipped: PostgreSQL (Debian's postgresql) is missing");
            return None;
        };
        let root = std::env::temp_dir().join(format!("dualperf-pg-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let mut as_user: Vec<String> = match netns {
            Some(ns) => ["ip", "netns", "exec", ns].map(String::from).to_vec(),
            None => Vec::new(),
        };
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let ok = Command::new("chown")
                .args(["-R", "nobody:nogroup", path_str(&root)])
                .status()
                .unwrap()
                .success();
            assert!(ok, "chown nobody {}", root.display());
            as_user.extend(
                [
                    "setpriv",
                    "--reuid=nobody",
                    "--regid=nogroup",
                    "--clear-groups",
                    "--",
                ]
                .map(String::from),
            );
        }
        let data = root.join("data");
        let mut cluster = Self {
            dir: root.clone(),
            as_user,
            pg_ctl,
            url: String::new(),
        };
        cluster.run(
            &initdb,
            &[
                "-D",
                path_str(&data),
                "-U",
                "dualperf",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ],
        );
        // A namespace of the test's own has every port free.
        let port = match netns {
            Some(_) => 5432,
            None => std::net::TcpListener::bind((addr, 0))
                .unwrap()
                .local_addr()
                .unwrap()
                .port(),
        };
        let opts = format!(
            "-p {port} -k {} -c listen_addresses={addr} -c fsync=off -c max_connections=200",
            path_str(&root)
        );
        let log = root.join("server.log");
        let pg_ctl = cluster.pg_ctl.clone();
        cluster.run(
            &pg_ctl,
            &[
                "-D",
                path_str(&data),
                "-o",
                &opts,
                "-l",
                path_str(&log),
                "-w",
                "start",
            ],
        );
        let host = if addr.contains(':') {
            format!("[{addr}]")
        } else {
            addr.to_owned()
        };
        cluster.url = format!("postgresql://dualperf@{host}:{port}/postgres");
        Some(cluster)
    }

    fn run(&self, program: &std::path::Path, args: &[&str]) {
        let mut cmd = match self.as_user.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(program);
                c
            }
            None => Command::new(program),
        };
        let out = cmd.args(args).env("LC_ALL", "C").output().unwrap();
        assert!(
            out.status.success(),
            "{} {args:?}: {}{}",
            program.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let mut cmd = match self.as_user.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&self.pg_ctl);
                c
            }
            None => Command::new(&self.pg_ctl),
        };
        let _ = cmd
            .args(["-D", path_str(&data), "-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
