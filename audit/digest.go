package audit

import (
	"encoding/hex"

	"github.com/zeebo/blake3"
)

// DigestAlg names the digest function in every record's digest_alg.
const DigestAlg = "blake3"

// Digest is the project's one digest: lowercase hex BLAKE3-256 of b. Callers
// pass canonical bytes (Canonical.Bytes) so that equal JSON values get equal
// digests.
func Digest(b []byte) string {
	sum := blake3.Sum256(b)
	var text [64]byte
	hex.Encode(text[:], sum[:])
	return string(text[:])
}

// DigestBytes is Digest before hex encoding.
func DigestBytes(b []byte) [32]byte {
	return blake3.Sum256(b)
}

// isDigest reports whether s has the form Digest produces.
func isDigest(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
