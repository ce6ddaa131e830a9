extension TestPKI {
    /// Sendable: immutable once built (under the PKI's lock). A class: the forgery kit reads it for every artifact
    /// it forges, and a copy of six leaves cost a few dozen reference counts.
    public final class BrokenChains: @unchecked Sendable {
        /// A whole chain under a root nobody trusts.
        public let untrusted: Leaf
        public let leafWithoutOID: Leaf
        public let intermediateWithoutOID: Leaf
        public let leafOIDCritical: Leaf
        public let leafExpired: Leaf
        public let intermediateNotCA: Leaf

        init(
            untrusted: Leaf, leafWithoutOID: Leaf, intermediateWithoutOID: Leaf, leafOIDCritical: Leaf,
            leafExpired: Leaf, intermediateNotCA: Leaf
        ) {
            self.untrusted = untrusted
            self.leafWithoutOID = leafWithoutOID
            self.intermediateWithoutOID = intermediateWithoutOID
            self.leafOIDCritical = leafOIDCritical
            self.leafExpired = leafExpired
            self.intermediateNotCA = intermediateNotCA
        }
    }
}
