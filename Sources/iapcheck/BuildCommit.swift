/// The commit a packed release was built from, for `iapcheck --version`: `scripts/release.sh` writes it here for its
/// build and puts this file back afterwards. Nil in a build from source.
let buildCommit: String? = nil
