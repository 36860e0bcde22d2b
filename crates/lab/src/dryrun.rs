//! `dualperf run --dry-run`: the runs of a plan and what each would run, as text and
//! as a document ([`DryRun`]), measuring nothing.

use crate::plan::Plan;
use crate::rundoc::{DryBackground, DryRun, DryRunRun, DrySend};
use crate::runner::{Place, Target};

/// `--dry-run --json`: the runs and what each would run, as data.
pub fn document(plan: &Plan, target: &Target) -> DryRun {
    let runs = plan
        .runs
        .iter()
        .map(|r| {
            let p = &plan.points[r.point];
            let send = match target {
                Target::Hosts(hosts) => {
                    let from = p.from.as_deref().unwrap_or(crate::hosts::SENDER);
                    let to = p.to.as_deref().unwrap_or(crate::hosts::RECEIVER);
                    DrySend::Hosts {
                        from: from.to_owned(),
                        to: to.to_owned(),
                        command: hosts_send(
                            hosts,
                            from,
                            to,
                            r.family,
                            plan.measured_args(p).join(" "),
                        ),
                    }
                }
                Target::Local(place) => DrySend::Local {
                    dest: place.dest(r.family),
                    args: plan.measured_args(p),
                },
                Target::Peer(peer, _) => DrySend::Local {
                    dest: peer.addr(r.family).ip().to_string(),
                    args: peer_args(plan, peer, p),
                },
            };
            let background = p
                .background
                .iter()
                .map(|b| DryBackground {
                    label: b.label.clone(),
                    args: plan.background_args(p, b),
                })
                .collect();
            DryRunRun {
                id: r.id.clone(),
                point: p.id.clone(),
                family: r.family,
                repetition: r.repetition,
                send,
                qos: p.qos.clone(),
                background,
            }
        })
        .collect();
    DryRun {
        plan: plan.name.clone(),
        points: plan.points.len(),
        families: plan.families.clone(),
        repetitions: plan.repetitions,
        run_duration_ns: plan.duration.as_nanos(),
        estimated_ns: plan.estimated(plan.runs.len()).as_nanos(),
        runs,
    }
}

/// `--dry-run`: the plan in one line, a hosts plan's hosts, and each run with the
/// `dualperf send` it would run, its routers' QoS files and its background flows.
pub fn text(plan: &Plan, target: &Target) -> String {
    let mut s = format!(
        "plan {}: {} points × {} families × {} repetitions = {} runs of {}, about {} in all\n",
        plan.name,
        plan.points.len(),
        plan.families.len(),
        plan.repetitions,
        plan.runs.len(),
        results::human::span(plan.duration.into()),
        results::human::span(plan.estimated(plan.runs.len()).into())
    );
    let quoted = |args: Vec<String>| {
        args.iter()
            .map(|a| {
                if a.contains(' ') {
                    format!("'{a}'")
                } else {
                    a.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    if let Target::Peer(peer, _) = target {
        s.push_str(&format!("far end: {}\n", peer.describe()));
    }
    if let Target::Hosts(hosts) = target {
        s.push_str("hosts (each runs `dualperf agent`; nothing is started on them):\n");
        let width = hosts.hosts.keys().map(String::len).max().unwrap_or(0);
        for (name, host) in &hosts.hosts {
            s.push_str(&format!("  {name:<width$}  {}\n", host.describe()));
        }
    }
    for r in &plan.runs {
        let p = &plan.points[r.point];
        match target {
            Target::Hosts(hosts) => {
                let from = p.from.as_deref().unwrap_or(crate::hosts::SENDER);
                let to = p.to.as_deref().unwrap_or(crate::hosts::RECEIVER);
                s.push_str(&format!(
                    "{}  {from} → {to}: {}\n",
                    r.id,
                    hosts_send(hosts, from, to, r.family, quoted(plan.measured_args(p)))
                ));
            }
            Target::Local(place) => s.push_str(&format!(
                "{}  dualperf send {} {}\n",
                r.id,
                place.dest(r.family),
                quoted(plan.measured_args(p))
            )),
            Target::Peer(peer, _) => s.push_str(&format!(
                "{}  dualperf send {} {}\n",
                r.id,
                peer.addr(r.family).ip(),
                quoted(peer_args(plan, peer, p))
            )),
        }
        for (node, file) in &p.qos {
            s.push_str(&format!("    router {node}: qos {file}\n"));
        }
        for b in &p.background {
            match target {
                Target::Hosts(hosts) => {
                    let from = b.from.as_deref().unwrap_or(crate::hosts::BG_FROM);
                    let to = b.to.as_deref().unwrap_or(crate::hosts::BG_TO);
                    s.push_str(&format!(
                        "    beside it, {} from {from} to {to}: {}\n",
                        b.label,
                        hosts_send(
                            hosts,
                            from,
                            to,
                            r.family,
                            plan.background_args(p, b).join(" ")
                        )
                    ));
                }
                Target::Peer(..) => {}
                Target::Local(place) => {
                    let lab = matches!(place, Place::Lab { .. });
                    let (from, to) = if b.from_sender {
                        (" from sender", place.dest(r.family))
                    } else {
                        (
                            if lab { " from bg-a" } else { "" },
                            place
                                .background()
                                .map_or("(no bg-a/bg-b in the lab)".into(), |bp| bp.dest(r.family)),
                        )
                    };
                    s.push_str(&format!(
                        "    beside it, {}{from}: dualperf send {to} {}\n",
                        b.label,
                        plan.background_args(p, b).join(" ")
                    ));
                }
            }
        }
    }
    s
}

/// A peer plan's send arguments after the destination: its port, then the flow's.
fn peer_args(plan: &Plan, peer: &crate::plan::peer::Peer, p: &crate::plan::Point) -> Vec<String> {
    let mut args = vec!["--port".to_owned(), peer.port.to_string()];
    args.extend(crate::plan::peer::send_args(plan, peer, p));
    args
}

/// `dualperf send --from AGENT DEST --port PORT ARGS` of a flow between two hosts, as
/// `--dry-run` shows it.
fn hosts_send(
    hosts: &crate::hosts::Hosts,
    from: &str,
    to: &str,
    family: u8,
    args: String,
) -> String {
    match hosts.ends(from, to, family) {
        Ok((agent, dest)) => format!(
            "dualperf send --from {agent} {} --port {} {args}",
            dest.ip(),
            dest.port()
        ),
        Err(e) => format!("({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dry_run_of_a_hosts_plan_shows_the_hosts_and_who_sends_to_whom() {
        let text = r#"version = 1
name = "across"
duration = "2s"
target = "hosts"

[flow]
udp = true
background = [{ from = "sender", udp = true }]

[factors]
ip = [4, 6]

[[points]]
label = "back"
from = "receiver"
to = "sender"

[hosts.sender]
agent4 = "198.18.1.2"
agent6 = "2001:2:0:1::2"
key_env = "NOT_READ_BY_A_DRY_RUN"

[hosts.receiver]
agent = "2001:2:0:4::2"
agent4 = "198.18.4.2"
"#;
        let e = Plan::parse(text, false).unwrap_err();
        assert!(e.to_string().contains("not both"), "{e}");
        let text = text.replace("agent = \"2001:2:0:4::2\"", "agent6 = \"2001:2:0:4::2\"");
        let plan = Plan::parse(&text, false).unwrap();
        // A dry run reads no keys.
        let target = Target::Hosts(crate::hosts::Hosts::new(
            plan.hosts.clone(),
            Default::default(),
        ));
        let out = super::text(&plan, &target);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0],
            "plan across: 1 points × 2 families × 1 repetitions = 2 runs of 2 s, about 9 s in all"
        );
        // Each flow with its seed, the same over both families.
        let (seed, bg) = (
            crate::plan::flow_seed("across", "back", None),
            crate::plan::flow_seed("across", "back", Some("bg1")),
        );
        assert_eq!(
            lines[1..6],
            [
                "hosts (each runs `dualperf agent`; nothing is started on them):".to_owned(),
                "  receiver  IPv4 198.18.4.2, IPv6 2001:2:0:4::2, port 4646, no key".to_owned(),
                "  sender    IPv4 198.18.1.2, IPv6 2001:2:0:1::2, port 4646, key from $NOT_READ_BY_A_DRY_RUN".to_owned(),
                format!("rep001-back-ipv4  receiver → sender: dualperf send --from 198.18.4.2:4646 198.18.1.2 --port 4646 --udp --label back --seed {seed}"),
                format!("    beside it, bg1 from receiver to sender: dualperf send --from 198.18.4.2:4646 198.18.1.2 --port 4646 --udp --seed {bg}"),
            ]
        );
        assert_eq!(
            lines[6],
            format!("rep001-back-ipv6  receiver → sender: dualperf send --from [2001:2:0:4::2]:4646 2001:2:0:1::2 --port 4646 --udp --label back --seed {seed}")
        );
        assert_eq!(lines.len(), 8);
        // The document holds the same commands.
        let doc = document(&plan, &target);
        assert_eq!((doc.plan.as_str(), doc.runs.len()), ("across", 2));
        match &doc.runs[1].send {
            DrySend::Hosts { from, to, command } => assert_eq!(
                (from.as_str(), to.as_str(), command.clone()),
                ("receiver", "sender", format!("dualperf send --from [2001:2:0:4::2]:4646 2001:2:0:1::2 --port 4646 --udp --label back --seed {seed}"))
            ),
            other => panic!("{other:?}"),
        }
    }
}
