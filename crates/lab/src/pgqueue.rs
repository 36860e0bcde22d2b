//! A campaign's work queue in PostgreSQL: controllers claim runs with `SELECT … FOR
//! UPDATE SKIP LOCKED`, so several can drive one fleet without waiting for each other.
//!
//! - **Claims expire.** A claim holds a lease; a controller that dies loses no work: once
//!   its lease has passed, another controller claims the run again (`attempts` counts).
//!   A finish is written only by the claim's holder and attempt, so a controller whose
//!   lease passed cannot overwrite the run's new claim.
//! - **Exclusive tests never share a host.** An exclusive run is claimed only while no
//!   other exclusive run holds a live claim on its source or destination, and only by
//!   a claimer that holds the exclusive-claim advisory lock, taken with
//!   `pg_try_advisory_xact_lock` (never waited for): claimers of light runs go on
//!   without it.
//! - **A family a host lacks** is a run recorded `failed` with the reason when it is
//!   queued, never a pass.
//!
//! The table (migration 2 of `pgschema::MIGRATIONS`):
//!
//! ```sql
//! campaigns(name PRIMARY KEY, started_at)
//! campaign_runs(id, campaign, round, src, dst, family, test, exclusive, src_addr,
//!     dst_addr, args, not_before, state, claimed_by, claimed_at, lease_until, attempts,
//!     finished_at, reason, result; UNIQUE (campaign, round, src, dst, family, test))
//! ```

use std::time::Duration;

use postgres::Client;
use serde_json::Value;

use crate::mesh::Mesh;
use crate::pgstore::{PgError, PgStore};

/// The advisory lock a claimer of exclusive runs holds ("dpexclus" in ASCII).
const EXCLUSIVE_LOCK: i64 = 0x6470_6578_636c_7573;

/// A run a controller claimed.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    /// The run's row.
    pub id: i64,
    /// Its attempt: the finish names it.
    pub attempt: i32,
    /// Its round.
    pub round: i32,
    /// The sending agent.
    pub src: String,
    /// The receiving agent.
    pub dst: String,
    /// 4 or 6.
    pub family: i16,
    /// The test's name.
    pub test: String,
    /// The agents' addresses.
    pub src_addr: String,
    /// See `src_addr`.
    pub dst_addr: String,
    /// The test's `send` options.
    pub args: Vec<String>,
}

/// How a claimed run ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Measured: `send --json`'s document.
    Done(Value),
    /// Not measured, and why; with what `send` printed, if it printed a document.
    Failed {
        /// Why.
        reason: String,
        /// `send --json`'s document, if any: nothing measured is dropped.
        result: Option<Value>,
    },
}

/// The campaign's runs by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Not claimed yet.
    pub queued: i64,
    /// Claimed, lease live or not.
    pub claimed: i64,
    /// Measured.
    pub done: i64,
    /// Failed, with a reason.
    pub failed: i64,
}

impl Progress {
    /// Every run is done or failed.
    pub fn finished(&self) -> bool {
        self.queued == 0 && self.claimed == 0
    }
}

/// A controller's connection to the queue.
pub struct Queue {
    client: Client,
}

impl Queue {
    /// Connect to the store at `url` (schema brought up to date).
    pub fn connect(url: &str) -> Result<Self, PgError> {
        Ok(Self {
            client: PgStore::connect(url)?.into_client(),
        })
    }

    /// Queue every run of `mesh` that is not queued yet (many controllers may do this at
    /// once: each run is one row). The campaign's start is the first controller's; runs
    /// an agent's missing family rules out are recorded failed. Returns the runs added.
    pub fn enqueue(&mut self, mesh: &Mesh) -> Result<u64, PgError> {
        let mut tx = self.client.transaction()?;
        tx.execute(
            "INSERT INTO campaigns (name) VALUES ($1) ON CONFLICT DO NOTHING",
            &[&mesh.name],
        )?;
        let insert = tx.prepare(
            "INSERT INTO campaign_runs (campaign, round, src, dst, family, test, exclusive,
                src_addr, dst_addr, args, not_before, state, reason)
             SELECT $1, $2, $3, $4, $5, $6, $7, $8::text::inet, $9::text::inet, $10::text::jsonb,
                c.started_at + make_interval(secs => $11::bigint / 1e9), $12, $13
             FROM campaigns c WHERE c.name = $1
             ON CONFLICT DO NOTHING",
        )?;
        let mut added = 0;
        for w in mesh.work() {
            let args = mesh
                .test(&w.test)
                .map(|t| t.args.clone())
                .unwrap_or_default();
            let missing = w.missing();
            let state = if missing.is_some() {
                "failed"
            } else {
                "queued"
            };
            added += tx.execute(
                &insert,
                &[
                    &mesh.name,
                    &i32::try_from(w.round).unwrap_or(i32::MAX),
                    &w.src,
                    &w.dst,
                    &i16::from(w.family),
                    &w.test,
                    &w.exclusive,
                    &w.src_addr.map(|a| a.to_string()),
                    &w.dst_addr.map(|a| a.to_string()),
                    &serde_json::to_string(&args).unwrap_or_default(),
                    &i64::try_from(w.offset_ns).unwrap_or(i64::MAX),
                    &state,
                    &missing,
                ],
            )?;
        }
        tx.commit()?;
        Ok(added)
    }

    /// Claim the next run of `campaign` that is due, for `lease`: a queued one, or one
    /// whose claim expired. `None` when none is due or free now.
    pub fn claim(
        &mut self,
        campaign: &str,
        controller: &str,
        lease: Duration,
    ) -> Result<Option<Claim>, PgError> {
        let mut tx = self.client.transaction()?;
        let exclusive_ok: bool = tx
            .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&EXCLUSIVE_LOCK])?
            .get(0);
        let lease_s = lease.as_secs_f64();
        let row = tx.query_opt(
            "WITH next AS (
                SELECT r.id FROM campaign_runs r
                 WHERE r.campaign = $1 AND r.not_before <= clock_timestamp()
                   AND (r.state = 'queued'
                        OR (r.state = 'claimed' AND r.lease_until < clock_timestamp()))
                   AND (NOT r.exclusive OR ($3 AND NOT EXISTS (
                        SELECT 1 FROM campaign_runs b
                         WHERE b.state = 'claimed' AND b.exclusive AND b.id <> r.id
                           AND b.lease_until >= clock_timestamp()
                           AND (b.src IN (r.src, r.dst) OR b.dst IN (r.src, r.dst)))))
                 ORDER BY r.not_before, r.id
                 LIMIT 1
                 FOR UPDATE SKIP LOCKED)
             UPDATE campaign_runs c
                SET state = 'claimed', claimed_by = $2, claimed_at = clock_timestamp(),
                    lease_until = clock_timestamp() + make_interval(secs => $4),
                    attempts = c.attempts + 1
               FROM next WHERE c.id = next.id
             RETURNING c.id, c.attempts, c.round, c.src, c.dst, c.family, c.test,
                host(c.src_addr), host(c.dst_addr), c.args::text",
            &[&campaign, &controller, &exclusive_ok, &lease_s],
        )?;
        tx.commit()?;
        Ok(row.map(|r| Claim {
            id: r.get(0),
            attempt: r.get(1),
            round: r.get(2),
            src: r.get(3),
            dst: r.get(4),
            family: r.get(5),
            test: r.get(6),
            src_addr: r.get::<_, Option<String>>(7).unwrap_or_default(),
            dst_addr: r.get::<_, Option<String>>(8).unwrap_or_default(),
            args: serde_json::from_str(r.get::<_, &str>(9)).unwrap_or_default(),
        }))
    }

    /// Record how claimed run `claim` ended; false when the claim is no longer this
    /// controller's (its lease passed and another took the run).
    pub fn finish(
        &mut self,
        claim: &Claim,
        controller: &str,
        outcome: &Outcome,
    ) -> Result<bool, PgError> {
        let (state, reason, result) = match outcome {
            Outcome::Done(v) => ("done", None, Some(v.to_string())),
            Outcome::Failed { reason, result } => (
                "failed",
                Some(reason.as_str()),
                result.as_ref().map(Value::to_string),
            ),
        };
        let n = self.client.execute(
            "UPDATE campaign_runs
                SET state = $4, finished_at = clock_timestamp(), reason = $5,
                    result = $6::text::jsonb
              WHERE id = $1 AND claimed_by = $2 AND attempts = $3 AND state = 'claimed'",
            &[
                &claim.id,
                &controller,
                &claim.attempt,
                &state,
                &reason,
                &result,
            ],
        )?;
        Ok(n == 1)
    }

    /// The campaign's runs by state.
    pub fn progress(&mut self, campaign: &str) -> Result<Progress, PgError> {
        let rows = self.client.query(
            "SELECT state, count(*) FROM campaign_runs WHERE campaign = $1 GROUP BY state",
            &[&campaign],
        )?;
        let mut p = Progress::default();
        for r in rows {
            let n: i64 = r.get(1);
            match r.get::<_, &str>(0) {
                "queued" => p.queued = n,
                "claimed" => p.claimed = n,
                "done" => p.done = n,
                _ => p.failed = n,
            }
        }
        Ok(p)
    }
}
