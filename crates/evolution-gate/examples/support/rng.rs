//! The benchmarks' random numbers: xoshiro256++ seeded through splitmix64 — small, fast and
//! reproducible, so a seed gives the same figures on every machine. Included by the examples
//! with `#[path]`; not an example itself.

/// xoshiro256++ seeded through splitmix64.
pub(crate) struct Rng([u64; 4]);

impl Rng {
    /// The generator for `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A win with probability `p`.
    #[allow(dead_code, reason = "used by gate_frontier, not by gate_calibration")]
    pub(crate) fn win(&mut self, p: f64) -> bool {
        self.uniform() < p
    }
}
