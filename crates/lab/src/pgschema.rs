//! The PostgreSQL store's schema, as numbered migrations: `pgstore` applies what a
//! store lacks; version 1 is the run directories' tables (`pgstore`), version 2 the mesh
//! campaigns' work queue (`pgqueue`).

/// The schema's migrations, in order: (version, what it does, SQL).
pub const MIGRATIONS: &[(i32, &str, &str)] = &[
    (
        1,
        "run directories, their factors and runs partitioned by month",
        "CREATE TABLE dirs (
        host TEXT NOT NULL,
        dir TEXT NOT NULL,
        plan TEXT NOT NULL,
        description TEXT NOT NULL,
        quick BOOLEAN NOT NULL,
        hostname TEXT,
        kernel TEXT,
        dualperf_version TEXT,
        stored_unix_ns BIGINT NOT NULL,
        PRIMARY KEY (host, dir)
    );
    CREATE TABLE factors (
        host TEXT NOT NULL,
        dir TEXT NOT NULL,
        point TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (host, dir, point, key),
        FOREIGN KEY (host, dir) REFERENCES dirs ON DELETE CASCADE
    );
    CREATE TABLE runs (
        host TEXT NOT NULL,
        dir TEXT NOT NULL,
        run_id TEXT NOT NULL,
        point TEXT NOT NULL,
        family SMALLINT NOT NULL CHECK (family IN (4, 6)),
        repetition INTEGER NOT NULL,
        started_unix_ns BIGINT NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        exit_code INTEGER NOT NULL,
        dst_addr INET,
        protocol TEXT,
        size_bytes BIGINT,
        throughput_bps DOUBLE PRECISION,
        rtt_ns DOUBLE PRECISION,
        owd_ns DOUBLE PRECISION,
        delay_ns DOUBLE PRECISION,
        jitter_ns DOUBLE PRECISION,
        loss_pct DOUBLE PRECISION,
        packets_sent BIGINT,
        packets_received BIGINT,
        argv JSONB NOT NULL,
        record JSONB NOT NULL,
        PRIMARY KEY (host, dir, run_id, started_at),
        FOREIGN KEY (host, dir) REFERENCES dirs ON DELETE CASCADE
    ) PARTITION BY RANGE (started_at);
    CREATE INDEX runs_point ON runs (point, family);",
    ),
    (2, "mesh campaigns' work queue", QUEUE),
];

/// The queue's schema, migration 2.
const QUEUE: &str = "CREATE TABLE campaigns (
        name TEXT PRIMARY KEY,
        started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
    );
    CREATE TABLE campaign_runs (
        id BIGSERIAL PRIMARY KEY,
        campaign TEXT NOT NULL REFERENCES campaigns ON DELETE CASCADE,
        round INTEGER NOT NULL,
        src TEXT NOT NULL,
        dst TEXT NOT NULL,
        family SMALLINT NOT NULL CHECK (family IN (4, 6)),
        test TEXT NOT NULL,
        exclusive BOOLEAN NOT NULL,
        src_addr INET,
        dst_addr INET,
        args JSONB NOT NULL,
        not_before TIMESTAMPTZ NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('queued', 'claimed', 'done', 'failed')),
        claimed_by TEXT,
        claimed_at TIMESTAMPTZ,
        lease_until TIMESTAMPTZ,
        attempts INTEGER NOT NULL DEFAULT 0,
        finished_at TIMESTAMPTZ,
        reason TEXT,
        result JSONB,
        UNIQUE (campaign, round, src, dst, family, test)
    );
    CREATE INDEX campaign_runs_open ON campaign_runs (campaign, not_before, id)
        WHERE state IN ('queued', 'claimed');
    CREATE INDEX campaign_runs_busy ON campaign_runs (src, dst)
        WHERE state = 'claimed' AND exclusive;";
