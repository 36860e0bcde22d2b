//! What the privileged netio tests share: the root check, `ip`, and a network namespace
//! of the test's own, deleted on drop (also while unwinding).

// Each test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::panic;
use std::process::Command;
use std::thread;

use netio::netns;

/// Whether a test needing root may run: root, or a skip with a message; under
/// `CI=true` a missing capability is a failure. `caps` names what the test needs.
pub fn privileged(caps: &str) -> bool {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("this test needs root ({caps}) and CI=true: a missing capability is a failure");
    }
    eprintln!("skipped: needs root");
    false
}

/// `ip ARGS…`'s standard output; a failing `ip` fails the test.
pub fn run(args: &[&str]) -> String {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("ip {args:?}: {e}"));
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A namespace of our own, deleted on drop (also while unwinding).
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// The namespace `NAME` (a leftover of a killed run of the same name is removed
    /// first).
    pub fn create(name: String) -> Self {
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run(&["netns", "add", &name]);
        Self { name }
    }

    /// `ip -n NAME args...`.
    pub fn ip(&self, args: &[&str]) -> String {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        run(&all)
    }

    /// Runs `f` on a new thread moved into this namespace; its panic is ours.
    pub fn run_inside<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let name = self.name.clone();
        let handle = thread::spawn(move || {
            netns::enter(&name).expect("enter the test namespace");
            f()
        });
        match handle.join() {
            Ok(v) => v,
            Err(payload) => panic::resume_unwind(payload),
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        match Command::new("ip")
            .args(["netns", "del", &self.name])
            .status()
        {
            Ok(s) if s.success() => {}
            other => eprintln!("could not delete namespace {}: {other:?}", self.name),
        }
    }
}
