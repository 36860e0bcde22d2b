//! Reservation processing at a router (RFC 2209 "RESV MESSAGE ARRIVES", "RESV TEAR
//! ARRIVES", "RESV ERROR ARRIVES"): reservation state per flow and next hop, merged per
//! interface and handed to [`Env::admit`], refusals answered with ResvErr, Resv and
//! ResvTear sent upstream.

use std::net::IpAddr;

use wire::rsvp::{code, FlowDescriptor, FlowSpec, Hop, Message, MsgType, Style};
use wire::time::{Duration, Instant};

use super::{toward, Cause, Installed, Router, Timer};
use crate::host::refresh_of;
use crate::msg::{self, error_spec, unicast};
use crate::state::{merge, Rsb};
use crate::{Env, ErrorSpecCode, Flow};

/// What one Resv asks, for each of its filters.
pub(super) struct Request {
    now: Instant,
    iface: usize,
    /// Our address the Resv came to (the ERROR_SPEC node of a refusal).
    node: IpAddr,
    nhop: Hop,
    style: Style,
    nhop_refresh: Duration,
    confirm: Option<IpAddr>,
}

impl Router {
    pub(super) fn on_resv(
        &mut self,
        now: Instant,
        in_iface: usize,
        ip_dst: IpAddr,
        msg: Message,
        env: &mut impl Env,
    ) {
        let (Some(nhop), Some(style)) = (msg.hop, msg.style) else {
            self.stats.malformed += 1;
            return;
        };
        let nhop_refresh = refresh_of(msg.time_values_ms, self.config.refresh);
        let req = Request {
            now,
            iface: in_iface,
            node: ip_dst,
            nhop,
            style,
            nhop_refresh,
            confirm: msg.confirm,
        };
        if style == Style::Wf {
            let mut m = msg;
            m.kind = MsgType::ResvErr;
            m.error = Some(error_spec(ip_dst, (code::UNKNOWN_STYLE, 0)));
            m.hop = Some(Hop {
                addr: ip_dst,
                lih: nhop.lih,
            });
            m.time_values_ms = None;
            m.confirm = None;
            self.stats.refuse(code::UNKNOWN_STYLE);
            self.push(unicast(Some(in_iface), ip_dst, nhop.addr, m));
            return;
        }
        for fd in &msg.flows {
            for filter in &fd.filters {
                let flow = Flow {
                    session: msg.session,
                    sender: *filter,
                };
                self.resv_filter(&req, flow, fd.flowspec, env);
            }
        }
    }

    /// One filter of a Resv: RFC 2209 "RESV MESSAGE ARRIVES" for FF.
    pub(super) fn resv_filter(
        &mut self,
        req: &Request,
        flow: Flow,
        spec: FlowSpec,
        env: &mut impl Env,
    ) {
        if !self.paths.contains_key(&flow) {
            let c = if self.sessions.contains_key(&flow.session) {
                code::NO_SENDER
            } else {
                code::NO_PATH
            };
            self.refuse(req, &flow, spec, (c, 0));
            return;
        }
        let expires = req.now + self.lifetime(req.nhop_refresh);
        let list = self.resvs.entry(flow).or_default();
        let before = match list.iter_mut().find(|r| r.nhop.addr == req.nhop.addr) {
            Some(rsb) => {
                let old = rsb.flowspec;
                rsb.nhop = req.nhop;
                rsb.style = req.style;
                rsb.flowspec = spec;
                rsb.nhop_refresh = req.nhop_refresh;
                rsb.expires = expires;
                Some(old)
            }
            None => {
                let armed = self
                    .timers
                    .arm(expires, Timer::ResvExpire(flow, req.nhop.addr));
                self.rsb_count += 1;
                list.push(Rsb {
                    nhop: req.nhop,
                    iface: req.iface,
                    style: req.style,
                    flowspec: spec,
                    nhop_refresh: req.nhop_refresh,
                    expires,
                    expiry_armed: armed,
                });
                None
            }
        };
        if before == Some(spec) {
            if req.confirm.is_some() {
                self.send_resv_up(&flow, req.confirm, env);
            }
            return;
        }
        match self.reconcile(req.iface, &flow, env) {
            Ok(changed) => {
                if changed || req.confirm.is_some() {
                    self.send_resv_up(&flow, req.confirm, env);
                }
            }
            Err(code) => {
                // undo the request: a new state goes, a changed one gets its old flowspec
                if let Some(list) = self.resvs.get_mut(&flow) {
                    match before {
                        Some(old) => {
                            if let Some(r) = list.iter_mut().find(|r| r.nhop.addr == req.nhop.addr)
                            {
                                r.flowspec = old;
                            }
                        }
                        None => {
                            list.retain(|r| r.nhop.addr != req.nhop.addr);
                            self.rsb_count -= 1;
                        }
                    }
                    if list.is_empty() {
                        self.resvs.remove(&flow);
                    }
                }
                self.refuse(req, &flow, spec, code);
            }
        }
    }

    /// Bring what is installed for `flow` on `iface` to the merge of its reservation
    /// states there. Ok(true) when it changed; Err when `admit` refused (nothing changed).
    pub(super) fn reconcile(
        &mut self,
        iface: usize,
        flow: &Flow,
        env: &mut impl Env,
    ) -> Result<bool, ErrorSpecCode> {
        let merged = merge(
            self.resvs
                .get(flow)
                .into_iter()
                .flatten()
                .filter(|r| r.iface == iface)
                .map(|r| &r.flowspec),
        );
        let old = self.installed.get(&(iface, *flow)).copied();
        match (merged, old) {
            (None, None) => Ok(false),
            (None, Some(_)) => {
                self.installed.remove(&(iface, *flow));
                env.release(iface, &flow.session, &flow.sender);
                Ok(true)
            }
            (Some(m), Some(o)) if m == o.spec => Ok(false),
            (Some(m), old) => {
                env.admit(
                    iface,
                    &flow.session,
                    &flow.sender,
                    &m,
                    old.as_ref().map(|o| &o.spec),
                )?;
                let seq = match old {
                    Some(o) => o.seq,
                    None => {
                        self.install_seq += 1;
                        self.install_seq
                    }
                };
                self.installed
                    .insert((iface, *flow), Installed { spec: m, seq });
                self.stats.admitted += 1;
                Ok(true)
            }
        }
    }

    /// ResvErr toward the next hop that asked.
    pub(super) fn refuse(
        &mut self,
        req: &Request,
        flow: &Flow,
        spec: FlowSpec,
        code: ErrorSpecCode,
    ) {
        self.stats.refuse(code.0);
        let mut m = msg::resv(
            MsgType::ResvErr,
            flow.session,
            Hop {
                addr: req.node,
                lih: req.nhop.lih,
            },
            None,
            req.style,
            vec![FlowDescriptor {
                flowspec: spec,
                filters: vec![flow.sender],
            }],
            None,
        );
        m.error = Some(error_spec(req.node, code));
        self.push(unicast(Some(req.iface), req.node, req.nhop.addr, m));
    }

    /// ResvErr toward the next hop of `rsb` (from a reinstall, or passed on from upstream).
    pub(super) fn send_resv_err(
        &mut self,
        flow: &Flow,
        rsb: &Rsb,
        error: Option<wire::rsvp::ErrorSpec>,
        code: ErrorSpecCode,
        env: &impl Env,
    ) {
        let (_, local) = toward(env, rsb.nhop.addr);
        let mut m = msg::resv(
            MsgType::ResvErr,
            flow.session,
            Hop {
                addr: local,
                lih: rsb.nhop.lih,
            },
            None,
            rsb.style,
            vec![FlowDescriptor {
                flowspec: rsb.flowspec,
                filters: vec![flow.sender],
            }],
            None,
        );
        m.error = Some(error.unwrap_or_else(|| error_spec(local, code)));
        self.push(unicast(Some(rsb.iface), local, rsb.nhop.addr, m));
    }

    /// Resv upstream to `flow`'s previous hop with the merged flowspec of its
    /// reservation states; false when there is nothing to send.
    pub(super) fn send_resv_up(
        &mut self,
        flow: &Flow,
        confirm: Option<IpAddr>,
        env: &impl Env,
    ) -> bool {
        let (Some(psb), Some(list)) = (self.paths.get(flow), self.resvs.get(flow)) else {
            return false;
        };
        let Some(spec) = merge(list.iter().map(|r| &r.flowspec)) else {
            return false;
        };
        let style = list[0].style;
        let phop = psb.phop;
        let Some(route) = env.route(phop.addr) else {
            return false;
        };
        let m = msg::resv(
            MsgType::Resv,
            flow.session,
            Hop {
                addr: route.local,
                lih: phop.lih,
            },
            Some(self.config.refresh_ms()),
            style,
            vec![FlowDescriptor {
                flowspec: spec,
                filters: vec![flow.sender],
            }],
            confirm,
        );
        self.push(unicast(Some(route.iface), route.local, phop.addr, m));
        true
    }

    pub(super) fn send_resv_tear_up(&mut self, flow: &Flow, last: &Rsb, env: &impl Env) {
        let Some(phop) = self.paths.get(flow).map(|p| p.phop) else {
            return;
        };
        let Some(route) = env.route(phop.addr) else {
            return;
        };
        let m = msg::resv(
            MsgType::ResvTear,
            flow.session,
            Hop {
                addr: route.local,
                lih: phop.lih,
            },
            None,
            last.style,
            vec![FlowDescriptor {
                flowspec: last.flowspec,
                filters: vec![flow.sender],
            }],
            None,
        );
        self.push(unicast(Some(route.iface), route.local, phop.addr, m));
    }

    pub(super) fn on_resv_tear(&mut self, msg: Message, env: &mut impl Env) {
        let Some(nhop) = msg.hop else {
            self.stats.malformed += 1;
            return;
        };
        for fd in &msg.flows {
            for filter in &fd.filters {
                let flow = Flow {
                    session: msg.session,
                    sender: *filter,
                };
                if !self.remove_resv(&flow, nhop.addr, Cause::Tear, env) {
                    self.stats.ignored += 1;
                }
            }
        }
    }

    /// Remove one reservation state; re-merge what is left on its interface; ResvTear
    /// upstream when the flow has no reservation left, else a Resv with the new merge.
    pub(super) fn remove_resv(
        &mut self,
        flow: &Flow,
        nhop: IpAddr,
        cause: Cause,
        env: &mut impl Env,
    ) -> bool {
        let Some(list) = self.resvs.get_mut(flow) else {
            return false;
        };
        let Some(i) = list.iter().position(|r| r.nhop.addr == nhop) else {
            return false;
        };
        let rsb = list.remove(i);
        self.rsb_count -= 1;
        if list.is_empty() {
            self.resvs.remove(flow);
        }
        match cause {
            Cause::Tear => self.stats.resv_tears += 1,
            Cause::Timeout => self.stats.resv_timeouts += 1,
        }
        // a smaller merge refused keeps the larger one installed: never less than asked
        let _ = self.reconcile(rsb.iface, flow, env);
        if self.resvs.contains_key(flow) {
            self.send_resv_up(flow, None, env);
        } else {
            self.send_resv_tear_up(flow, &rsb, env);
        }
        true
    }

    /// Pass a ResvErr on to the next hops that asked for the filters it names. Code 3 or
    /// 4 (the previous hop has no path state for the flow, as after its restart) also
    /// marks our path state to send the reservation up with the next Path.
    pub(super) fn on_resv_err(&mut self, msg: Message, env: &mut impl Env) {
        let lost = msg
            .error
            .is_some_and(|e| e.code == code::NO_PATH || e.code == code::NO_SENDER);
        let mut sent = false;
        for fd in &msg.flows {
            for filter in &fd.filters {
                let flow = Flow {
                    session: msg.session,
                    sender: *filter,
                };
                if lost {
                    if let Some(psb) = self.paths.get_mut(&flow) {
                        psb.resv_refresh_needed = true;
                    }
                }
                let list = self.resvs.get(&flow).cloned().unwrap_or_default();
                for rsb in &list {
                    self.send_resv_err(&flow, rsb, msg.error, (0, 0), env);
                    sent = true;
                }
            }
        }
        if !sent {
            self.stats.ignored += 1;
        }
    }
}
