//! A tiny eBPF assembler: just the instructions the tester's two XDP
//! programs use, encoded as the kernel's `struct bpf_insn` (8 bytes: opcode,
//! `dst_reg:4 | src_reg:4`, signed 16-bit offset, signed 32-bit immediate;
//! Documentation/bpf/standardization/instruction-set.rst). Jumps name a
//! label; [`Asm::finish`] resolves every label to the offset in instruction
//! slots counted from the slot after the jump (a 64-bit immediate load takes
//! two slots).

use std::collections::HashMap;

/// A register, `r0`..`r10` (`r10` is the read-only frame pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reg(pub(crate) u8);

pub(crate) const R0: Reg = Reg(0);
pub(crate) const R1: Reg = Reg(1);
pub(crate) const R2: Reg = Reg(2);
pub(crate) const R3: Reg = Reg(3);
pub(crate) const R4: Reg = Reg(4);
pub(crate) const R5: Reg = Reg(5);
pub(crate) const R6: Reg = Reg(6);
pub(crate) const R7: Reg = Reg(7);
pub(crate) const R8: Reg = Reg(8);
pub(crate) const R9: Reg = Reg(9);
pub(crate) const R10: Reg = Reg(10);

// Instruction classes.
const LD: u8 = 0x00;
const LDX: u8 = 0x01;
const ST: u8 = 0x02;
const STX: u8 = 0x03;
const ALU: u8 = 0x04;
const JMP: u8 = 0x05;
const ALU64: u8 = 0x07;
// Modes.
const IMM: u8 = 0x00;
const MEM: u8 = 0x60;
const ATOMIC: u8 = 0xc0;
// Source operand.
const K: u8 = 0x00;
const X: u8 = 0x08;

/// Access size of a load or store.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Size {
    /// 1 byte.
    B,
    /// 2 bytes.
    H,
    /// 4 bytes.
    W,
    /// 8 bytes.
    DW,
}

impl Size {
    fn code(self) -> u8 {
        match self {
            Size::W => 0x00,
            Size::H => 0x08,
            Size::B => 0x10,
            Size::DW => 0x18,
        }
    }
}

/// ALU operations (64-bit unless noted).
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)]
pub(crate) enum Alu {
    Add = 0x00,
    Sub = 0x10,
    Mul = 0x20,
    Div = 0x30,
    Or = 0x40,
    And = 0x50,
    Lsh = 0x60,
    Rsh = 0x70,
    Mod = 0x90,
    Xor = 0xa0,
    Mov = 0xb0,
}

/// Conditional jumps (unsigned comparisons, 64-bit).
#[derive(Clone, Copy, Debug)]
#[allow(dead_code)]
pub(crate) enum Cond {
    Eq = 0x10,
    Gt = 0x20,
    Ge = 0x30,
    Ne = 0x50,
    Lt = 0xa0,
    Le = 0xb0,
}

const JA: u8 = 0x00;
const CALL: u8 = 0x80;
const EXIT: u8 = 0x90;
const END: u8 = 0xd0;
const TO_BE: u8 = 0x08;
/// `src_reg` of a 64-bit immediate load whose immediate is a map fd.
const PSEUDO_MAP_FD: u8 = 1;

/// One encoded instruction slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

impl Insn {
    fn new(code: u8, dst: Reg, src: Reg, off: i16, imm: i32) -> Self {
        Insn {
            code,
            regs: (src.0 << 4) | (dst.0 & 0x0f),
            off,
            imm,
        }
    }

    /// The 8 bytes the kernel reads (little-endian host).
    pub(crate) fn to_bytes(self) -> [u8; 8] {
        let mut b = [0u8; 8];
        b[0] = self.code;
        b[1] = self.regs;
        b[2..4].copy_from_slice(&self.off.to_le_bytes());
        b[4..8].copy_from_slice(&self.imm.to_le_bytes());
        b
    }
}

/// A program being assembled.
#[derive(Default)]
pub(crate) struct Asm {
    insns: Vec<Insn>,
    labels: HashMap<&'static str, usize>,
    fixups: Vec<(usize, &'static str)>,
}

impl Asm {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, i: Insn) -> &mut Self {
        self.insns.push(i);
        self
    }

    /// `dst = imm` (64-bit, sign-extended).
    pub(crate) fn mov_imm(&mut self, dst: Reg, imm: i32) -> &mut Self {
        self.alu_imm(Alu::Mov, dst, imm)
    }

    /// `dst = src`.
    pub(crate) fn mov(&mut self, dst: Reg, src: Reg) -> &mut Self {
        self.alu(Alu::Mov, dst, src)
    }

    /// `dst op= imm`, 64-bit.
    pub(crate) fn alu_imm(&mut self, op: Alu, dst: Reg, imm: i32) -> &mut Self {
        self.push(Insn::new(ALU64 | K | op as u8, dst, R0, 0, imm))
    }

    /// `dst op= src`, 64-bit.
    pub(crate) fn alu(&mut self, op: Alu, dst: Reg, src: Reg) -> &mut Self {
        self.push(Insn::new(ALU64 | X | op as u8, dst, src, 0, 0))
    }

    /// `dst = htobe{bits}(dst)`: byte swap on a little-endian host, upper
    /// bits cleared (`BPF_END | BPF_TO_BE`).
    pub(crate) fn bswap_be(&mut self, dst: Reg, bits: i32) -> &mut Self {
        self.push(Insn::new(ALU | END | TO_BE, dst, R0, 0, bits))
    }

    /// `dst = *(size *)(src + off)`, zero-extended.
    pub(crate) fn ldx(&mut self, size: Size, dst: Reg, src: Reg, off: i16) -> &mut Self {
        self.push(Insn::new(LDX | MEM | size.code(), dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = src`.
    pub(crate) fn stx(&mut self, size: Size, dst: Reg, off: i16, src: Reg) -> &mut Self {
        self.push(Insn::new(STX | MEM | size.code(), dst, src, off, 0))
    }

    /// `*(size *)(dst + off) = imm`.
    pub(crate) fn st_imm(&mut self, size: Size, dst: Reg, off: i16, imm: i32) -> &mut Self {
        self.push(Insn::new(ST | MEM | size.code(), dst, R0, off, imm))
    }

    /// `lock *(u64 *)(dst + off) += src` (`BPF_ATOMIC | BPF_ADD`).
    pub(crate) fn atomic_add64(&mut self, dst: Reg, off: i16, src: Reg) -> &mut Self {
        self.push(Insn::new(STX | ATOMIC | Size::DW.code(), dst, src, off, 0))
    }

    /// `dst = map` : the two-slot 64-bit load of a map fd
    /// (`BPF_PSEUDO_MAP_FD`), which the verifier turns into the map's address.
    pub(crate) fn ld_map_fd(&mut self, dst: Reg, fd: i32) -> &mut Self {
        self.push(Insn::new(
            LD | IMM | Size::DW.code(),
            dst,
            Reg(PSEUDO_MAP_FD),
            0,
            fd,
        ));
        self.push(Insn::new(0, R0, R0, 0, 0))
    }

    /// `dst = imm` (a full 64-bit immediate: the two-slot `BPF_LD | BPF_IMM |
    /// BPF_DW`, low half first).
    pub(crate) fn ld_imm64(&mut self, dst: Reg, imm: u64) -> &mut Self {
        self.push(Insn::new(
            LD | IMM | Size::DW.code(),
            dst,
            R0,
            0,
            imm as u32 as i32,
        ));
        self.push(Insn::new(0, R0, R0, 0, (imm >> 32) as u32 as i32))
    }

    /// Places `name` at the next instruction.
    pub(crate) fn label(&mut self, name: &'static str) -> &mut Self {
        let prev = self.labels.insert(name, self.insns.len());
        assert!(prev.is_none(), "label {name} defined twice");
        self
    }

    /// `goto name`.
    pub(crate) fn ja(&mut self, name: &'static str) -> &mut Self {
        self.fixups.push((self.insns.len(), name));
        self.push(Insn::new(JMP | JA, R0, R0, 0, 0))
    }

    /// `if dst cond imm goto name`.
    pub(crate) fn jmp_imm(&mut self, c: Cond, dst: Reg, imm: i32, name: &'static str) -> &mut Self {
        self.fixups.push((self.insns.len(), name));
        self.push(Insn::new(JMP | K | c as u8, dst, R0, 0, imm))
    }

    /// `if dst cond src goto name`.
    pub(crate) fn jmp(&mut self, c: Cond, dst: Reg, src: Reg, name: &'static str) -> &mut Self {
        self.fixups.push((self.insns.len(), name));
        self.push(Insn::new(JMP | X | c as u8, dst, src, 0, 0))
    }

    /// `r0 = helper(r1, …, r5)`; clobbers `r1`..`r5`.
    pub(crate) fn call(&mut self, helper: i32) -> &mut Self {
        self.push(Insn::new(JMP | CALL, R0, R0, 0, helper))
    }

    /// `return r0`.
    pub(crate) fn exit(&mut self) -> &mut Self {
        self.push(Insn::new(JMP | EXIT, R0, R0, 0, 0))
    }

    /// The encoded program; panics on an undefined label (a bug in the
    /// program builders, caught by their tests).
    pub(crate) fn finish(&self) -> Vec<Insn> {
        let mut out = self.insns.clone();
        for &(at, name) in &self.fixups {
            let target = *self
                .labels
                .get(name)
                .unwrap_or_else(|| panic!("undefined label {name}"));
            let off = target as i64 - at as i64 - 1;
            out[at].off = i16::try_from(off).expect("jump within 32k slots");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(a: &Asm) -> Vec<[u8; 8]> {
        a.finish().into_iter().map(Insn::to_bytes).collect()
    }

    #[test]
    fn encodings_match_the_kernels() {
        // Reference bytes as `llvm-objdump -d` prints them for clang's BPF
        // output (and as Documentation/bpf/standardization lays them out).
        let mut a = Asm::new();
        a.mov_imm(R0, 1) // b7 00 00 00 01 00 00 00  r0 = 1
            .exit() // 95 ...
            .ldx(Size::W, R2, R1, 4) // 61 12 04 00 ...  r2 = *(u32 *)(r1 + 4)
            .call(5) // 85 00 00 00 05 00 00 00  call bpf_ktime_get_ns
            .bswap_be(R1, 32) // dc 01 00 00 20 00 00 00  r1 = be32 r1
            .atomic_add64(R7, 8, R1) // db 17 08 00 ...  lock *(u64 *)(r7 + 8) += r1
            .stx(Size::H, R2, -2, R3) // 6b 32 fe ff ...
            .alu(Alu::Add, R1, R9) // 0f 91 ...
            .alu_imm(Alu::And, R8, 15) // 57 08 00 00 0f 00 00 00
            .ld_map_fd(R1, 7) // 18 11 00 00 07 00 00 00, 00 * 8
            .ld_imm64(R3, 0x8877_6655_4433_2211); // 18 03 .. 11 22 33 44, 00 .. 55 66 77 88
        assert_eq!(
            bytes(&a),
            vec![
                [0xb7, 0x00, 0, 0, 1, 0, 0, 0],
                [0x95, 0, 0, 0, 0, 0, 0, 0],
                [0x61, 0x12, 4, 0, 0, 0, 0, 0],
                [0x85, 0, 0, 0, 5, 0, 0, 0],
                [0xdc, 0x01, 0, 0, 32, 0, 0, 0],
                [0xdb, 0x17, 8, 0, 0, 0, 0, 0],
                [0x6b, 0x32, 0xfe, 0xff, 0, 0, 0, 0],
                [0x0f, 0x91, 0, 0, 0, 0, 0, 0],
                [0x57, 0x08, 0, 0, 15, 0, 0, 0],
                [0x18, 0x11, 0, 0, 7, 0, 0, 0],
                [0, 0, 0, 0, 0, 0, 0, 0],
                [0x18, 0x03, 0, 0, 0x11, 0x22, 0x33, 0x44],
                [0, 0, 0, 0, 0x55, 0x66, 0x77, 0x88],
            ]
        );
    }

    #[test]
    fn labels_resolve_forward_and_backward_counting_two_slot_loads() {
        let mut a = Asm::new();
        a.label("top")
            .jmp_imm(Cond::Eq, R1, 0, "out") // slot 0 → 4: off 3
            .ld_map_fd(R1, 3) // slots 1, 2
            .ja("top") // slot 3 → 0: off -4
            .label("out")
            .exit(); // slot 4
        let b = bytes(&a);
        // 15 01 03 00 00 00 00 00  if r1 == 0 goto +3
        assert_eq!(b[0], [0x15, 0x01, 3, 0, 0, 0, 0, 0]);
        // 05 00 fc ff 00 00 00 00  goto -4
        assert_eq!(b[3], [0x05, 0x00, 0xfc, 0xff, 0, 0, 0, 0]);
        // 3d 21 ..: if r1 >= r2 (register form)
        let mut c = Asm::new();
        c.jmp(Cond::Ge, R1, R2, "x").label("x").exit();
        assert_eq!(bytes(&c)[0], [0x3d, 0x21, 0, 0, 0, 0, 0, 0]);
    }
}
