//! Shared helpers: the real binary under a kill-on-drop guard, receivers on kernel-chosen ports, raw wire messages, JSON access.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver as Channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_dualperf");

/// How long any child may live before the test gives up on it. A guard against hangs,
/// never an assertion about how fast anything is.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// A running `dualperf` process. Dropping it kills and reaps the process, so a failing
/// test never leaves one behind. Stdout is collected whole; stderr is drained line by
/// line (kept, and offered to [`Proc::wait_stderr_line`]) for the process's whole life.
pub struct Proc {
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr_thread: Option<JoinHandle<()>>,
    stderr_all: Arc<Mutex<String>>,
    stderr_lines: Channel<String>,
    /// Its stdin, if piped ([`Proc::spawn_piped`]).
    stdin: Option<std::process::ChildStdin>,
}

/// What a finished process left.
#[derive(Debug)]
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Proc {
    /// Start `dualperf ARGS` with no inherited key and no stdin.
    pub fn spawn<S: AsRef<OsStr>>(args: &[S]) -> Self {
        Self::spawn_with_env(args, &[])
    }

    /// As [`Proc::spawn`], with extra environment variables.
    pub fn spawn_with_env<S: AsRef<OsStr>>(args: &[S], env: &[(&str, &str)]) -> Self {
        Self::start(args, env, false)
    }

    /// As [`Proc::spawn`], with stdin a pipe: [`Proc::write_stdin`], [`Proc::close_stdin`].
    pub fn spawn_piped<S: AsRef<OsStr>>(args: &[S]) -> Self {
        Self::start(args, &[], true)
    }

    /// Write `bytes` to its stdin.
    pub fn write_stdin(&mut self, bytes: &[u8]) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("spawned with a piped stdin");
        stdin.write_all(bytes).expect("writing to its stdin");
    }

    /// Close its stdin (end of file).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    fn start<S: AsRef<OsStr>>(args: &[S], env: &[(&str, &str)], piped: bool) -> Self {
        let mut child = Command::new(BIN)
            .args(args)
            .env_remove("DUALPERF_KEY")
            .envs(env.iter().copied())
            .stdin(if piped { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {BIN}: {e}"));
        let mut out = child.stdout.take().expect("piped stdout");
        let stdout = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        let err = child.stderr.take().expect("piped stderr");
        let stderr_all = Arc::new(Mutex::new(String::new()));
        let (tx, stderr_lines) = mpsc::channel();
        let all = stderr_all.clone();
        let stderr_thread = std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                {
                    let mut all = all.lock().unwrap_or_else(|e| e.into_inner());
                    all.push_str(&line);
                    all.push('\n');
                }
                // Nobody may be listening any more; keep draining regardless.
                let _ = tx.send(line);
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdout: Some(stdout),
            stderr_thread: Some(stderr_thread),
            stderr_all,
            stderr_lines,
            stdin,
        }
    }

    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid fits in i32")
    }

    /// Deliver SIGINT, as Ctrl-C in a terminal would.
    pub fn interrupt(&self) {
        // SAFETY: kill(2) with a pid this test spawned and has not reaped yet.
        let rc = unsafe { libc::kill(self.pid(), libc::SIGINT) };
        assert_eq!(rc, 0, "kill -INT {}", self.pid());
    }

    /// SIGKILL, and reap it.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Everything written to stderr so far.
    pub fn stderr_so_far(&self) -> String {
        self.stderr_all
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The first stderr line (from here on) for which `want` holds.
    pub fn wait_stderr_line(&self, want: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) if want(&line) => return line,
                Ok(_) => {}
                Err(_) => panic!(
                    "the expected stderr line never came; stderr was:\n{}",
                    self.stderr_so_far()
                ),
            }
        }
    }

    /// Wait for the process to exit by itself and collect its output.
    pub fn finish(self) -> Finished {
        self.finish_within(HANG_GUARD)
    }

    /// As [`Proc::finish`], for a process that runs longer than [`HANG_GUARD`] (a whole
    /// plan): `guard` is still only a guard against hangs.
    pub fn finish_within(mut self, guard: Duration) -> Finished {
        let deadline = Instant::now() + guard;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() >= deadline {
                panic!(
                    "dualperf (pid {}) did not exit; stderr so far:\n{}",
                    self.pid(),
                    self.stderr_so_far()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let stdout = self
            .stdout
            .take()
            .map(|h| h.join().unwrap_or_default())
            .unwrap_or_default();
        if let Some(h) = self.stderr_thread.take() {
            let _ = h.join();
        }
        Finished {
            status,
            stdout,
            stderr: self.stderr_so_far(),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// Run `dualperf ARGS` to completion.
pub fn run<S: AsRef<OsStr>>(args: &[S]) -> Finished {
    Proc::spawn(args).finish()
}

/// Run `dualperf ARGS` to completion with one extra environment variable.
pub fn run_with_env<S: AsRef<OsStr>>(args: &[S], var: (&str, &str)) -> Finished {
    Proc::spawn_with_env(args, &[var]).finish()
}

/// Run `dualperf send DEST -p PORT ARGS` to completion.
pub fn send(dest: &str, port: u16, args: &[&str]) -> Finished {
    run(&send_args(dest, port, args))
}

/// Start `dualperf send DEST -p PORT ARGS` without waiting for it.
pub fn spawn_send(dest: &str, port: u16, args: &[&str]) -> Proc {
    Proc::spawn(&send_args(dest, port, args))
}

fn send_args(dest: &str, port: u16, args: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = vec!["send".into(), dest.into(), "-p".into(), port.to_string()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    all
}

impl Finished {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Panics with the process's output unless it exited 0.
    pub fn assert_success(&self) -> &Self {
        assert!(
            self.status.success(),
            "dualperf failed ({:?})\nstdout:\n{}\nstderr:\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }

    /// Stdout as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Stdout as JSON lines.
    pub fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))
            })
            .collect()
    }
}

/// A `dualperf recv --port 0 ...` and the port it chose.
pub struct Receiver {
    pub proc: Proc,
    pub port: u16,
}

/// What a `recv --json` printed: its flow lines and its final counters line.
#[derive(Debug)]
pub struct RecvOutput {
    pub finished: Finished,
    /// The `data` of every `{"type":"flow"}` line, in order.
    pub flows: Vec<Value>,
    /// The `data` of the final `{"type":"counters"}` line.
    pub counters: Value,
}

impl Receiver {
    /// Start a receiver on a free port; `extra` are further `recv` options.
    pub fn start(extra: &[&str]) -> Self {
        let mut args = vec!["recv", "--port", "0"];
        args.extend_from_slice(extra);
        let proc = Proc::spawn(&args);
        let line = proc.wait_stderr_line(|l| l.starts_with("dualperf recv: listening on"));
        // "dualperf recv: listening on [::]:PORT (UDP and TCP...)"
        let port = line
            .split_once("]:")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        assert!(
            line.starts_with("dualperf recv: listening on [::]:"),
            "the receiver should listen dual-stack on [::]: {line}"
        );
        Self { proc, port }
    }

    pub fn addr_v4(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    pub fn addr_v6(&self) -> SocketAddr {
        SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, self.port))
    }

    /// Wait for a `--json` receiver to exit by itself and parse what it printed.
    pub fn finish(self) -> RecvOutput {
        parse_recv(self.proc.finish())
    }

    /// Ctrl-C, then wait for it to exit and parse what it printed.
    pub fn interrupt_and_finish(self) -> RecvOutput {
        self.proc.interrupt();
        self.finish()
    }
}

fn parse_recv(finished: Finished) -> RecvOutput {
    let lines = finished.json_lines();
    let (last, rest) = lines
        .split_last()
        .unwrap_or_else(|| panic!("recv printed nothing; stderr:\n{}", finished.stderr));
    assert_eq!(
        last["type"], "counters",
        "the last line of recv --json is the counters: {last}"
    );
    let flows = rest
        .iter()
        .map(|l| {
            assert_eq!(l["type"], "flow", "a recv --json line: {l}");
            l["data"].clone()
        })
        .collect();
    RecvOutput {
        counters: last["data"].clone(),
        flows,
        finished,
    }
}

/// The unsigned integer at JSON pointer `ptr`.
pub fn u(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no unsigned integer at {ptr} in {v:#}"))
}

/// The histogram (object of value → count) at `ptr`, as `(key, count)` pairs.
pub fn hist(v: &Value, ptr: &str) -> BTreeMap<String, u64> {
    v.pointer(ptr)
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("no object at {ptr} in {v:#}"))
        .iter()
        .map(|(k, n)| (k.clone(), n.as_u64().expect("a count")))
        .collect()
}

/// `{key: n}`.
pub fn only(key: &str, n: u64) -> BTreeMap<String, u64> {
    BTreeMap::from([(key.to_owned(), n)])
}

/// The counters a `recv --json` ended with, in a fixed order, for one exact comparison.
pub fn counters(c: &Value) -> [(&'static str, u64); 7] {
    [
        "datagrams",
        "malformed_datagrams",
        "unknown_flow",
        "wrong_source",
        "bad_connections",
        "auth_failures",
        "handshake_timeouts",
    ]
    .map(|name| (name, u(c, &format!("/{name}"))))
}

/// A scratch directory under Cargo's per-target tmp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("dualperf-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create the temp dir");
        Self(dir)
    }

    pub fn path(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 temp path")
}

/// xorshift64*: a tiny seeded generator, so garbage is the same on every run.
pub struct Prng(u64);

impl Prng {
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// A probe header as the wire format defines it: magic 0xD6, version 1 and `flags`,
/// flow id u16 BE, sequence u32 BE, transmit ns u64 BE; zero padding up to `len`.
pub fn probe(flow: u16, seq: u32, flags: u8, len: usize) -> Vec<u8> {
    let mut p = vec![0xD6, 0x10 | flags];
    p.extend_from_slice(&flow.to_be_bytes());
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&1_700_000_000_000_000_000u64.to_be_bytes());
    p.resize(len.max(16), 0);
    p.truncate(len);
    p
}

/// A control connection spoken by hand: u32 BE length prefix, JSON body.
pub struct Control {
    pub stream: TcpStream,
}

impl Control {
    pub fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr).expect("connect to the receiver");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("read timeout");
        Self { stream }
    }

    pub fn send(&mut self, msg: &Value) {
        let body = serde_json::to_vec(msg).expect("encode");
        let mut frame = u32::try_from(body.len())
            .expect("small message")
            .to_be_bytes()
            .to_vec();
        frame.extend_from_slice(&body);
        self.stream
            .write_all(&frame)
            .expect("write a control message");
    }

    pub fn recv(&mut self) -> Value {
        let mut prefix = [0u8; 4];
        self.stream
            .read_exact(&mut prefix)
            .expect("read a control message prefix");
        let mut body = vec![0u8; u32::from_be_bytes(prefix) as usize];
        self.stream
            .read_exact(&mut body)
            .expect("read a control message body");
        serde_json::from_slice(&body).expect("a JSON control message")
    }

    /// Hello, challenge, empty auth, welcome: a session on a receiver without --key.
    pub fn open_session(addr: SocketAddr) -> Self {
        let mut c = Self::connect(addr);
        c.send(&serde_json::json!({"type": "hello", "version": 1}));
        let challenge = c.recv();
        assert_eq!(challenge["type"], "challenge", "{challenge}");
        c.send(&serde_json::json!({"type": "auth", "mac": ""}));
        let welcome = c.recv();
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        c
    }

    /// Block until the receiver closes the connection; true on a clean EOF or a reset,
    /// false if it sent something instead.
    pub fn wait_closed_by_peer(&mut self) -> bool {
        let mut buf = [0u8; 256];
        match self.stream.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
            Err(e) => panic!("waiting for the receiver to close the connection: {e}"),
        }
    }
}
