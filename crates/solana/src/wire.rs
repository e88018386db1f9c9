//! The parts of Solana's transaction wire format the driver needs: where
//! the signatures are, the message they sign, its account keys and its
//! recent blockhash. Legacy and v0 messages alike.

/// A compact-u16 ("shortvec") length at `at`: (value, bytes used).
pub fn shortvec(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    let mut value = 0usize;
    for i in 0..3 {
        let b = *bytes.get(at + i)?;
        value |= usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// A serialized transaction, checked for shape.
pub struct Wire<'a> {
    raw: &'a [u8],
    /// Number of signature slots.
    pub slots: usize,
    /// Offset of the first signature.
    first: usize,
}

impl<'a> Wire<'a> {
    pub fn parse(raw: &'a [u8]) -> Option<Wire<'a>> {
        let (slots, used) = shortvec(raw, 0)?;
        let wire = Wire { raw, slots, first: used };
        if slots == 0 || raw.len() <= wire.message_offset() {
            return None;
        }
        wire.blockhash()?;
        Some(wire)
    }

    fn message_offset(&self) -> usize {
        self.first + 64 * self.slots
    }

    /// The bytes every signature signs.
    pub fn message(&self) -> &'a [u8] {
        &self.raw[self.message_offset()..]
    }

    pub fn signature(&self, slot: usize) -> &'a [u8] {
        &self.raw[self.first + 64 * slot..self.first + 64 * (slot + 1)]
    }

    /// Where signature `slot` sits in the raw bytes.
    pub fn signature_range(&self, slot: usize) -> std::ops::Range<usize> {
        self.first + 64 * slot..self.first + 64 * (slot + 1)
    }

    /// Offset of the account-key list inside the message (after the
    /// optional version byte and the three header bytes).
    fn keys_offset(&self) -> usize {
        let versioned = self.message()[0] & 0x80 != 0;
        usize::from(versioned) + 3
    }

    /// The message's static account keys.
    pub fn account_keys(&self) -> Option<Vec<[u8; 32]>> {
        let m = self.message();
        let at = self.keys_offset();
        let (n, used) = shortvec(m, at)?;
        let start = at + used;
        let keys = m.get(start..start + 32 * n)?;
        Some(keys.chunks_exact(32).map(|k| k.try_into().expect("32-byte chunks")).collect())
    }

    /// The program of each instruction, in order. A program is always one
    /// of the static keys (lookup tables cannot name programs).
    pub fn program_ids(&self) -> Option<Vec<[u8; 32]>> {
        let m = self.message();
        let keys = self.account_keys()?;
        let at = self.keys_offset();
        let (n, used) = shortvec(m, at)?;
        let mut at = at + used + 32 * n + 32;
        let (count, used) = shortvec(m, at)?;
        at += used;
        let mut programs = Vec::with_capacity(count);
        for _ in 0..count {
            programs.push(*keys.get(usize::from(*m.get(at)?))?);
            at += 1;
            for _ in 0..2 {
                // The account indexes, then the data: each a length and bytes.
                let (len, used) = shortvec(m, at)?;
                at += used + len;
            }
        }
        (at <= m.len()).then_some(programs)
    }

    /// The recent blockhash the transaction's lifetime hangs on.
    pub fn blockhash(&self) -> Option<[u8; 32]> {
        let m = self.message();
        let at = self.keys_offset();
        let (n, used) = shortvec(m, at)?;
        let start = at + used + 32 * n;
        m.get(start..start + 32)?.try_into().ok()
    }
}
