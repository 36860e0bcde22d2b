//! The Internet checksum of RFC 1071: the 16-bit one's complement of the one's complement
//! sum of the data taken as big-endian 16-bit words (an odd final octet is padded with a
//! zero octet), used by the IPv4 header, ICMPv4, ICMPv6, UDP and TCP.
//!
//! ```text
//!   sum  = d[0..2] +' d[2..4] +' ... +' (d[n-1] << 8)     (+' : add with end-around carry)
//!   checksum = !sum                                       (stored big-endian)
//! ```
//!
//! A buffer whose checksum field is correct sums, checksum included, to 0xFFFF, so
//! [`internet`] over it returns 0: that is how receivers verify.
//!
//! - [`internet`] checksums one buffer; [`Sum`] accumulates several pieces (a
//!   pseudo-header and a message) and handles pieces of odd length as if they were
//!   concatenated.
//! - [`pseudo_header_v4`] and [`pseudo_header_v6`] start a [`Sum`] with the upper-layer
//!   pseudo-header of RFC 768/793 and RFC 8200 §8.1 (which ICMPv6 uses, RFC 4443 §2.3).
//! - [`update_u16`] updates a checksum after one 16-bit word changed, with RFC 1624
//!   eqn. 3, `HC' = ~(~HC + ~m + m')`, which never produces the -0 (0xFFFF) that
//!   RFC 1141's eqn. 2 can: a router decrementing the TTL gets the same value a full
//!   recomputation would.

use std::net::{Ipv4Addr, Ipv6Addr};

/// A running one's complement sum (RFC 1071 §4.1's accumulator, 64 bits wide so that
/// carries are folded only once, in [`Sum::fold`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sum {
    acc: u64,
    /// The first octet of an unfinished word, when the data added so far has odd length.
    pending: Option<u8>,
}

impl Sum {
    /// An empty sum.
    pub const fn new() -> Self {
        Self {
            acc: 0,
            pending: None,
        }
    }

    /// Add `data`, continuing any odd octet left by the previous [`Sum::add`], so that
    /// adding two pieces equals adding their concatenation.
    pub fn add(&mut self, data: &[u8]) -> &mut Self {
        let mut data = data;
        if let Some(high) = self.pending.take() {
            let Some((&low, rest)) = data.split_first() else {
                self.pending = Some(high);
                return self;
            };
            self.acc += u64::from(u16::from_be_bytes([high, low]));
            data = rest;
        }
        let mut words = data.chunks_exact(2);
        for w in &mut words {
            self.acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
        }
        if let [last] = words.remainder() {
            self.pending = Some(*last);
        }
        self
    }

    /// Add one 16-bit word. Any odd octet left by [`Sum::add`] is first padded with zero.
    pub fn add_u16(&mut self, word: u16) -> &mut Self {
        self.flush();
        self.acc += u64::from(word);
        self
    }

    /// Add a 32-bit value as two 16-bit words (a pseudo-header length, for example).
    pub fn add_u32(&mut self, value: u32) -> &mut Self {
        self.add_u16((value >> 16) as u16);
        self.add_u16(value as u16)
    }

    fn flush(&mut self) {
        if let Some(high) = self.pending.take() {
            self.acc += u64::from(high) << 8;
        }
    }

    /// The folded sum (not complemented), 0..=0xFFFF; an odd final octet is padded
    /// with zero.
    pub fn fold(&self) -> u16 {
        let mut s = *self;
        s.flush();
        fold(s.acc)
    }

    /// The checksum: the complement of [`Sum::fold`]. Over data that includes a correct
    /// checksum field this is 0.
    pub fn finish(&self) -> u16 {
        !self.fold()
    }
}

fn fold(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The RFC 1071 checksum of `data`: the complemented, folded one's complement sum of its
/// big-endian 16-bit words. Returns 0 over data whose embedded checksum is correct.
pub fn internet(data: &[u8]) -> u16 {
    Sum::new().add(data).finish()
}

/// The one's complement sum of already-folded 16-bit sums, folded and complemented: the
/// checksum of the concatenation of the (even-length) pieces the sums were taken over.
pub fn combine(sums: &[u16]) -> u16 {
    let mut s = Sum::new();
    for &w in sums {
        s.add_u16(w);
    }
    s.finish()
}

/// A [`Sum`] holding the IPv4 upper-layer pseudo-header (RFC 768, RFC 793 §3.1): source,
/// destination, zero, protocol and the upper-layer length.
pub fn pseudo_header_v4(src: &Ipv4Addr, dst: &Ipv4Addr, protocol: u8, len: u16) -> Sum {
    let mut s = Sum::new();
    s.add(&src.octets())
        .add(&dst.octets())
        .add_u16(u16::from(protocol))
        .add_u16(len);
    s
}

/// A [`Sum`] holding the IPv6 upper-layer pseudo-header of RFC 8200 §8.1: source,
/// destination, the 32-bit upper-layer packet length, three zero octets and the next
/// header value. ICMPv6 (RFC 4443 §2.3) adds its message to it and takes
/// [`Sum::finish`].
pub fn pseudo_header_v6(src: &Ipv6Addr, dst: &Ipv6Addr, next_header: u8, len: u32) -> Sum {
    let mut s = Sum::new();
    s.add(&src.octets())
        .add(&dst.octets())
        .add_u32(len)
        .add_u16(u16::from(next_header));
    s
}

/// The checksum after one 16-bit word covered by it changed from `old` to `new`: RFC 1624
/// eqn. 3, `HC' = ~(~HC + ~m + m')`. Equal to a full recomputation whenever `checksum`
/// was itself computed over data that is not all zero (always true of an IP header).
pub fn update_u16(checksum: u16, old: u16, new: u16) -> u16 {
    let sum = u64::from(!checksum) + u64::from(!old) + u64::from(new);
    !fold(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny xorshift64 generator, enough for property-style tests.
    struct XorShift(u64);
    impl XorShift {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
    }

    #[test]
    fn rfc1071_worked_example() {
        // RFC 1071 §3: bytes 00 01 f2 03 f4 f5 f6 f7 sum to ddf2 (folded), so the
        // checksum is its complement, 220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(Sum::new().add(&data).fold(), 0xddf2);
        assert_eq!(internet(&data), 0x220d);
        // The sum of the data followed by its checksum verifies to 0.
        let mut with = data.to_vec();
        with.extend_from_slice(&0x220du16.to_be_bytes());
        assert_eq!(internet(&with), 0);
        // combine of the per-word sums equals the whole.
        assert_eq!(combine(&[0x0001, 0xf203, 0xf4f5, 0xf6f7]), 0x220d);
    }

    #[test]
    fn pieces_of_odd_length_sum_like_their_concatenation() {
        let data: Vec<u8> = (0u8..=200).map(|i| i.wrapping_mul(37)).collect();
        let whole = internet(&data);
        for split in [0, 1, 3, 100, 199, 201] {
            let (a, b) = data.split_at(split);
            assert_eq!(Sum::new().add(a).add(b).finish(), whole, "split {split}");
        }
        // An odd final octet is padded with zero.
        assert_eq!(internet(&[0xab]), !0xab00);
        assert_eq!(Sum::new().add(&[0xab]).add_u16(1).fold(), 0xab01);
        assert_eq!(internet(&[]), 0xffff);
    }

    #[test]
    fn rfc1624_example() {
        // RFC 1624 §4: checksum 0xdd2f, a field changes from 0x5555 to 0x3285. Eqn. 3
        // gives 0x0000 (eqn. 2 of RFC 1141 would give the -0 0xffff).
        assert_eq!(update_u16(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    #[test]
    fn pseudo_headers_sum_their_fields() {
        let src = Ipv4Addr::new(198, 18, 0, 1);
        let dst = Ipv4Addr::new(198, 19, 0, 2);
        let mut manual = Vec::new();
        manual.extend_from_slice(&src.octets());
        manual.extend_from_slice(&dst.octets());
        manual.extend_from_slice(&[0, 17, 0, 20]);
        assert_eq!(
            pseudo_header_v4(&src, &dst, 17, 20).finish(),
            internet(&manual)
        );

        let src6: Ipv6Addr = "2001:2::1".parse().unwrap();
        let dst6: Ipv6Addr = "2001:2::2".parse().unwrap();
        let mut manual = Vec::new();
        manual.extend_from_slice(&src6.octets());
        manual.extend_from_slice(&dst6.octets());
        manual.extend_from_slice(&[0, 0, 0x01, 0x02, 0, 0, 0, 58]);
        assert_eq!(
            pseudo_header_v6(&src6, &dst6, 58, 0x102).finish(),
            internet(&manual)
        );
    }

    #[test]
    fn incremental_update_equals_full_recomputation() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..5000 {
            let mut h = [0u8; 20];
            for chunk in h.chunks_mut(8) {
                let r = rng.next().to_be_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
            h[0] = 0x45;
            h[10] = 0;
            h[11] = 0;
            let full = internet(&h);
            h[10..12].copy_from_slice(&full.to_be_bytes());
            assert_eq!(internet(&h), 0);

            // Change one random word other than the checksum itself.
            let word = loop {
                let w = (rng.next() % 10) as usize;
                if w != 5 {
                    break w;
                }
            };
            let at = word * 2;
            let old = u16::from_be_bytes([h[at], h[at + 1]]);
            let new = if rng.next() % 4 == 0 {
                // TTL decrement, the router's common case.
                old.wrapping_sub(0x100)
            } else {
                rng.next() as u16
            };
            h[at..at + 2].copy_from_slice(&new.to_be_bytes());
            let incremental = update_u16(full, old, new);
            h[10] = 0;
            h[11] = 0;
            assert_eq!(incremental, internet(&h), "header {h:02x?}");
        }
    }
}
