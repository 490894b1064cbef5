//! The tests' random numbers: Marsaglia's xorshift64, seeded per test so every run draws the
//! same cases (one generator for all the randomized tests of the crate).

pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `len` characters drawn from `alphabet`.
    pub fn string(&mut self, alphabet: &[char], len: usize) -> Vec<char> {
        (0..len).map(|_| alphabet[self.below(alphabet.len())]).collect()
    }
}
