//! A tester port as a thread: it enters the port's network namespace
//! (`netio::netns::enter`), opens the [`TesterPort`] there and runs the jobs sent to it,
//! so that every generator runs on a thread of the port's namespace (the kernel resolves
//! the port's ifindex in the caller's). Generators are loaded once per frame template
//! and kept by key.

use std::collections::HashMap;
use std::io;
use std::sync::mpsc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};
use netio::xdp::{Generator, PortConfig, TesterPort, TxConfig};

/// What a job sees: the port and its loaded generators.
pub(crate) struct PortState {
    pub port: TesterPort,
    gens: HashMap<u64, Generator>,
}

impl PortState {
    /// The generator of template `key`, loaded from `tx` the first time.
    pub fn generator(&mut self, key: u64, tx: &TxConfig) -> io::Result<&mut Generator> {
        if !self.gens.contains_key(&key) {
            let g = self.port.generator(tx)?;
            self.gens.insert(key, g);
        }
        Ok(self.gens.get_mut(&key).expect("just inserted"))
    }
}

type Job = Box<dyn FnOnce(&mut PortState) + Send>;

/// One tester port's thread.
pub(crate) struct PortWorker {
    /// `NS/IFNAME`, for messages.
    pub name: String,
    /// The port's MAC.
    pub mac: [u8; 6],
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// A job's answer, to wait for.
pub(crate) struct Pending<R>(mpsc::Receiver<io::Result<R>>, String);

impl<R> Pending<R> {
    /// The job's result (an error if the port's thread died).
    pub fn wait(self) -> Result<R> {
        self.0
            .recv()
            .map_err(|_| anyhow!("tester port {}: its thread ended", self.1))?
            .with_context(|| format!("tester port {}", self.1))
    }
}

impl PortWorker {
    /// Starts the thread of port `ifname` in namespace `ns` and opens the port there.
    pub fn spawn(ns: &str, ifname: &str) -> Result<PortWorker> {
        let name = format!("{ns}/{ifname}");
        let (jobs, rx) = mpsc::channel::<Job>();
        let (ready_tx, ready) = mpsc::channel::<io::Result<[u8; 6]>>();
        let (ns_, if_) = (ns.to_owned(), ifname.to_owned());
        let thread = std::thread::Builder::new()
            .name(format!("rfc2544-{ifname}"))
            .spawn(move || {
                let opened = netio::netns::enter(&ns_).and_then(|()| {
                    let port = TesterPort::open(&if_, &PortConfig::default())?;
                    let mac = port.mac()?;
                    Ok((port, mac))
                });
                let mut state = match opened {
                    Ok((port, mac)) => {
                        let _ = ready_tx.send(Ok(mac));
                        PortState {
                            port,
                            gens: HashMap::new(),
                        }
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                for job in rx {
                    job(&mut state);
                }
            })
            .context("starting a tester port's thread")?;
        let mac = ready
            .recv()
            .map_err(|_| anyhow!("tester port {name}: its thread ended"))?
            .with_context(|| {
                format!("opening tester port {name} (root and kernel ≥ 5.18 needed)")
            })?;
        Ok(PortWorker {
            name,
            mac,
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `f` on the port's thread; its answer comes with [`Pending::wait`].
    pub fn start<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PortState) -> io::Result<R> + Send + 'static,
    ) -> Pending<R> {
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::new(move |s| {
            let _ = tx.send(f(s));
        });
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
        Pending(rx, self.name.clone())
    }

    /// Runs `f` on the port's thread and waits for it.
    pub fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut PortState) -> io::Result<R> + Send + 'static,
    ) -> Result<R> {
        self.start(f).wait()
    }
}

impl Drop for PortWorker {
    /// Ends the thread, which closes the port (its XDP program detaches).
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
