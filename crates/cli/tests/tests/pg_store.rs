//! `--store postgresql://…`: a real PostgreSQL (`pg.rs`) holds what the run directories
//! hold, `export` reads the same rows from it as from the SQLite index, and many
//! writers at once, first ones included (the migrations), are safe.

use serde_json::Value;

use crate::pg::PgCluster;
use crate::support::{path_str, run, Proc, TempDir};

use crate::plan_run::PLAN;

#[test]
fn export_from_postgresql_equals_export_from_the_run_directories() {
    let Some(pg) = PgCluster::start("export") else {
        return;
    };
    let tmp = TempDir::new("pg-export");
    let plan = tmp.path("tiny.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let dirs: Vec<_> = (0..2).map(|i| tmp.path(&format!("run{i}"))).collect();
    // One run straight into the store, one stored afterwards by export.
    run(&[
        "run",
        path_str(&plan),
        "--dir",
        path_str(&dirs[0]),
        "--store",
        &pg.url,
    ])
    .assert_success();
    run(&["run", path_str(&plan), "--dir", path_str(&dirs[1])]).assert_success();
    let stored = run(&["export", "--store", &pg.url, path_str(&dirs[1]), "--json"]);
    stored.assert_success();
    for format in [&["--json"][..], &[][..]] {
        let mut from_dirs = vec!["export", path_str(&dirs[0]), path_str(&dirs[1])];
        from_dirs.extend(format);
        let from_dirs = run(&from_dirs);
        from_dirs.assert_success();
        let mut from_pg = vec!["export", "--store", &pg.url];
        from_pg.extend(format);
        let from_pg = run(&from_pg);
        from_pg.assert_success();
        assert_eq!(from_pg.stdout, from_dirs.stdout, "{format:?}");
    }
    let runs = run(&["export", "--store", &pg.url, "--json"]).json();
    assert_eq!(runs.as_array().unwrap().len(), 16, "{runs}");
    // Every row has its IP version and the address it went to, and the whole record.
    let rows = run(&[
        "export",
        "--store",
        &pg.url,
        "--json",
        "--sql",
        "SELECT family, host(dst_addr) AS dst, record->'run'->>'family' AS rec_family, \
         record->'report'->'flows'->0->'sent'->>'packets' AS sent FROM runs",
    ])
    .json();
    for r in rows.as_array().unwrap() {
        let want = if r["family"] == 4 { "127.0.0.1" } else { "::1" };
        assert_eq!(r["dst"], want, "{r}");
        assert_eq!(r["rec_family"], Value::from(r["family"].to_string()), "{r}");
        assert!(
            r["sent"].as_str().unwrap().parse::<u64>().unwrap() > 0,
            "{r}"
        );
    }
    // Read-only: --sql cannot change the store.
    let refused = run(&["export", "--store", &pg.url, "--sql", "DELETE FROM runs"]);
    assert_ne!(refused.code(), Some(0));
    assert!(refused.stderr.contains("read-only"), "{}", refused.stderr);
}

#[test]
fn many_writers_at_once_into_a_new_store_apply_the_schema_once_and_lose_no_run() {
    let Some(pg) = PgCluster::start("writers") else {
        return;
    };
    let tmp = TempDir::new("pg-writers");
    let plan = tmp.path("tiny.toml");
    std::fs::write(&plan, PLAN).unwrap();
    let dir = tmp.path("run");
    run(&["run", path_str(&plan), "--dir", path_str(&dir)]).assert_success();
    // Eight copies of the directory, stored at once by eight processes into a store
    // that has no schema yet.
    let copies: Vec<_> = (0..8)
        .map(|i| {
            let c = tmp.path(&format!("copy{i}"));
            let ok = std::process::Command::new("cp")
                .args(["-r", path_str(&dir), path_str(&c)])
                .status()
                .unwrap()
                .success();
            assert!(ok);
            c
        })
        .collect();
    let writers: Vec<Proc> = copies
        .iter()
        .map(|c| Proc::spawn(&["export", "--store", &pg.url, path_str(c), "--json"]))
        .collect();
    for w in writers {
        w.finish().assert_success();
    }
    let q = |sql: &str| run(&["export", "--store", &pg.url, "--json", "--sql", sql]).json();
    // Each migration applied once (a second apply of one would have failed a writer).
    let applied = q("SELECT count(*) AS n, count(DISTINCT version) AS d, max(version) AS v FROM dualperf_schema");
    assert_eq!(applied[0]["n"], applied[0]["d"], "{applied:?}");
    assert_eq!(applied[0]["n"], applied[0]["v"], "{applied:?}");
    assert_eq!(q("SELECT count(*) AS n FROM runs")[0]["n"], 8 * 8);
    assert_eq!(q("SELECT count(DISTINCT dir) AS n FROM runs")[0]["n"], 8);
}
