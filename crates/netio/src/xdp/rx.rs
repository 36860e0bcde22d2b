//! The receiving port's XDP program: counts the tester's frames per stream
//! and drops them; passes everything else (ARP, ND, …) to the stack.
//!
//! Frames it recognises (every access bounds-checked against `data_end`):
//! Ethernet II → IPv4 with IHL 5, protocol UDP, not a fragment, or IPv6
//! with next header UDP → UDP → the 18-byte tag at the payload start, magic
//! 0x2544 (layout in `wire::testframe`, big-endian). A VLAN tag is not
//! skipped: such frames are passed.
//!
//! Per stream (array map `dp_rx_streams`, key = stream number, value
//! [`STREAM_VALUE`] bytes laid out by the `S_*` offsets), for an **armed**
//! stream, with `latency = bpf_ktime_get_ns() − tx_ns` (both
//! `CLOCK_MONOTONIC` of this host):
//! - `seq < first_seq` → `ramp` += 1 (RFC 2544 §23: frames before the trial
//!   proper are not counted);
//! - `latency > timeout_ns` → `late` += 1 (RFC 8219 §7.2 / Lencse & Shima:
//!   a frame later than the timeout is lost);
//! - else `received` += 1, `sum_ns` += latency, `min_ns` / `max_ns`,
//!   `reordered` += 1 when `seq` is below the highest seen, and when
//!   `(seq − first_seq) % tag_every == 0` the tag slot
//!   `(seq − first_seq) / tag_every` of the stream's bank gets
//!   `latency + 1` (0 = not received).
//!
//! The counters use atomic adds; `min_ns`, `max_ns` and the highest `seq`
//! are plain read-compare-write, which can lose an update if two CPUs
//! receive the same stream at once. A veth delivers XDP frames of one
//! queue on one CPU, so on the tester's pairs this does not happen.

use super::asm::{Alu, Asm, Cond, Size, R0, R1, R10, R2, R3, R4, R5, R6, R7, R8, R9};
use super::bpf::{HELPER_KTIME_GET_NS, HELPER_MAP_LOOKUP_ELEM, XDP_DROP, XDP_PASS};

/// Streams per port (the tag's stream byte).
pub(crate) const STREAMS: u32 = 256;
/// Streams that can hold tagged latencies at once (tag banks).
pub const TAG_BANKS: u32 = 4;
/// Bytes of one stream's map value.
pub(crate) const STREAM_VALUE: u32 = 96;

pub(crate) const S_RECEIVED: i16 = 0;
pub(crate) const S_LATE: i16 = 8;
pub(crate) const S_RAMP: i16 = 16;
pub(crate) const S_SUM: i16 = 24;
pub(crate) const S_REORDERED: i16 = 32;
pub(crate) const S_MIN: i16 = 40;
pub(crate) const S_MAX: i16 = 48;
/// Highest seq seen + 1 (0 = none).
pub(crate) const S_HIGHEST: i16 = 56;
pub(crate) const S_TIMEOUT: i16 = 64;
pub(crate) const S_FIRST_SEQ: i16 = 72;
/// `tag_every − 1`.
pub(crate) const S_TAG_MASK: i16 = 76;
/// `log2(tag_every)`.
pub(crate) const S_TAG_SHIFT: i16 = 80;
/// Tag bank, `u32::MAX` = none.
pub(crate) const S_BANK: i16 = 84;
pub(crate) const S_ARMED: i16 = 88;

const ETH_HLEN: i32 = 14;
pub(crate) const TAG_LEN: i32 = 18;
const V4_TAG: i32 = ETH_HLEN + 20 + 8;
const V6_TAG: i32 = ETH_HLEN + 40 + 8;

/// The RX program for maps `streams` (fd) and `tags` (fd, `TAG_BANKS ×
/// max_tags` u64 slots).
pub(crate) fn program(streams: i32, tags: i32, max_tags: u32) -> Asm {
    let mut a = Asm::new();
    // r2 = data, r3 = data_end.
    a.ldx(Size::W, R2, R1, 0).ldx(Size::W, R3, R1, 4);
    a.mov(R4, R2).alu_imm(Alu::Add, R4, ETH_HLEN);
    a.jmp(Cond::Gt, R4, R3, "pass");
    // Ethertype, loaded little-endian: 0x0800 reads 0x0008.
    a.ldx(Size::H, R5, R2, 12);
    a.jmp_imm(Cond::Eq, R5, 0x0008, "ipv4");
    a.jmp_imm(Cond::Eq, R5, 0xdd86u16 as i32, "ipv6");
    a.ja("pass");

    a.label("ipv4");
    a.mov(R4, R2).alu_imm(Alu::Add, R4, V4_TAG + TAG_LEN);
    a.jmp(Cond::Gt, R4, R3, "pass");
    a.ldx(Size::B, R5, R2, ETH_HLEN as i16);
    a.jmp_imm(Cond::Ne, R5, 0x45, "pass");
    a.ldx(Size::B, R5, R2, (ETH_HLEN + 9) as i16);
    a.jmp_imm(Cond::Ne, R5, 17, "pass");
    // More-fragments flag or a fragment offset: not ours to parse.
    a.ldx(Size::H, R5, R2, (ETH_HLEN + 6) as i16);
    a.alu_imm(Alu::And, R5, 0xff3f);
    a.jmp_imm(Cond::Ne, R5, 0, "pass");
    a.alu_imm(Alu::Add, R2, V4_TAG);
    a.ja("tag");

    a.label("ipv6");
    a.mov(R4, R2).alu_imm(Alu::Add, R4, V6_TAG + TAG_LEN);
    a.jmp(Cond::Gt, R4, R3, "pass");
    a.ldx(Size::B, R5, R2, (ETH_HLEN + 6) as i16);
    a.jmp_imm(Cond::Ne, R5, 17, "pass");
    a.alu_imm(Alu::Add, R2, V6_TAG);

    // r2 = the tag, 18 bytes in bounds.
    a.label("tag");
    a.ldx(Size::H, R5, R2, 0);
    a.jmp_imm(Cond::Ne, R5, 0x4425, "pass");
    a.ldx(Size::B, R5, R2, 2);
    a.stx(Size::W, R10, -4, R5); // key = stream
    a.ldx(Size::W, R8, R2, 6).bswap_be(R8, 32); // r8 = seq
    a.ldx(Size::DW, R9, R2, 10).bswap_be(R9, 64); // r9 = tx_ns
    a.call(HELPER_KTIME_GET_NS);
    a.alu(Alu::Sub, R0, R9).mov(R9, R0); // r9 = latency
    a.ld_map_fd(R1, streams)
        .mov(R2, R10)
        .alu_imm(Alu::Add, R2, -4);
    a.call(HELPER_MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, R0, 0, "drop");
    a.mov(R7, R0);
    a.ldx(Size::W, R1, R7, S_ARMED);
    a.jmp_imm(Cond::Eq, R1, 0, "drop");
    a.mov_imm(R6, 1);
    a.ldx(Size::W, R1, R7, S_FIRST_SEQ);
    a.jmp(Cond::Ge, R8, R1, "counted");
    a.atomic_add64(R7, S_RAMP, R6).ja("drop");

    a.label("counted");
    a.ldx(Size::DW, R2, R7, S_TIMEOUT);
    a.jmp(Cond::Le, R9, R2, "on_time");
    a.atomic_add64(R7, S_LATE, R6).ja("drop");

    a.label("on_time");
    a.atomic_add64(R7, S_RECEIVED, R6)
        .atomic_add64(R7, S_SUM, R9);
    a.ldx(Size::DW, R2, R7, S_MIN);
    a.jmp(Cond::Ge, R9, R2, "min_done");
    a.stx(Size::DW, R7, S_MIN, R9);
    a.label("min_done");
    a.ldx(Size::DW, R2, R7, S_MAX);
    a.jmp(Cond::Le, R9, R2, "max_done");
    a.stx(Size::DW, R7, S_MAX, R9);
    a.label("max_done");
    a.mov(R3, R8).alu_imm(Alu::Add, R3, 1);
    a.ldx(Size::DW, R2, R7, S_HIGHEST);
    a.jmp(Cond::Le, R3, R2, "not_highest");
    a.stx(Size::DW, R7, S_HIGHEST, R3).ja("tagged");
    a.label("not_highest");
    a.jmp(Cond::Eq, R3, R2, "tagged"); // a duplicate of the highest
    a.atomic_add64(R7, S_REORDERED, R6);

    // Tag slot (seq − first_seq) >> shift when the low bits are zero.
    a.label("tagged");
    a.ldx(Size::W, R1, R7, S_FIRST_SEQ);
    a.mov(R3, R8).alu(Alu::Sub, R3, R1);
    a.ldx(Size::W, R2, R7, S_TAG_MASK);
    a.mov(R4, R3).alu(Alu::And, R4, R2);
    a.jmp_imm(Cond::Ne, R4, 0, "drop");
    a.ldx(Size::W, R2, R7, S_TAG_SHIFT);
    a.alu(Alu::Rsh, R3, R2);
    a.jmp_imm(Cond::Ge, R3, max_tags as i32, "drop");
    a.ldx(Size::W, R2, R7, S_BANK);
    a.jmp_imm(Cond::Ge, R2, TAG_BANKS as i32, "drop");
    a.alu_imm(Alu::Mul, R2, max_tags as i32)
        .alu(Alu::Add, R3, R2);
    a.stx(Size::W, R10, -8, R3);
    a.ld_map_fd(R1, tags).mov(R2, R10).alu_imm(Alu::Add, R2, -8);
    a.call(HELPER_MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, R0, 0, "drop");
    a.alu_imm(Alu::Add, R9, 1).stx(Size::DW, R0, 0, R9);

    a.label("drop");
    a.mov_imm(R0, XDP_DROP).exit();
    a.label("pass");
    a.mov_imm(R0, XDP_PASS).exit();
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_assembles_with_every_label_defined() {
        let insns = program(3, 4, 65536).finish();
        assert!(insns.len() > 60 && insns.len() < 200, "{}", insns.len());
    }

    #[test]
    fn offsets_stay_inside_the_value_and_aligned() {
        for off in [
            S_RECEIVED,
            S_LATE,
            S_RAMP,
            S_SUM,
            S_REORDERED,
            S_MIN,
            S_MAX,
            S_HIGHEST,
            S_TIMEOUT,
        ] {
            assert_eq!(off % 8, 0);
            assert!(off as u32 + 8 <= STREAM_VALUE);
        }
        assert!(S_ARMED as u32 + 4 <= STREAM_VALUE);
    }
}
