package jshost

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/des"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"strconv"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
)

// Symmetric ciphers for createCipheriv and crypto.subtle. The host keeps
// no cipher state between calls: the JS side holds it (the offset reached,
// the IV of the next CBC block, the plaintext an AEAD tag covers) and hands
// it back with every chunk, so a call is a pure function of its arguments.
// Padding is the JS side's too; here every block mode gets whole blocks.

// errBadDecrypt is OpenSSL's answer, through Node, to a wrong key, IV or
// padding.
var errBadDecrypt = &cryptoError{"ERR_OSSL_BAD_DECRYPT", "error:1C800064:Provider routines::bad decrypt"}

// blockCipher is the block cipher name (aes, des-ede3) keyed with key.
func blockCipher(name string, key []byte) (cipher.Block, error) {
	var b cipher.Block
	var err error
	switch name {
	case "aes":
		b, err = aes.NewCipher(key)
	case "des-ede3":
		b, err = des.NewTripleDESCipher(key)
	default:
		return nil, fmt.Errorf("unknown block cipher %q", name)
	}
	if err != nil {
		return nil, &cryptoError{"ERR_CRYPTO_INVALID_KEYLEN", "Invalid key length"}
	}
	return b, nil
}

// cryptBlocks runs mode (cbc, ecb) of a block cipher over whole blocks.
func cryptBlocks(name, mode string, encrypt bool, key, iv, data []byte) ([]byte, error) {
	b, err := blockCipher(name, key)
	if err != nil {
		return nil, err
	}
	bs := b.BlockSize()
	if len(data)%bs != 0 {
		return nil, fmt.Errorf("%d bytes are not whole %d-byte blocks", len(data), bs)
	}
	out := make([]byte, len(data))
	switch mode {
	case "cbc":
		if len(iv) != bs {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
		}
		if encrypt {
			cipher.NewCBCEncrypter(b, iv).CryptBlocks(out, data)
		} else {
			cipher.NewCBCDecrypter(b, iv).CryptBlocks(out, data)
		}
	case "ecb":
		for i := 0; i < len(data); i += bs {
			if encrypt {
				b.Encrypt(out[i:i+bs], data[i:i+bs])
			} else {
				b.Decrypt(out[i:i+bs], data[i:i+bs])
			}
		}
	default:
		return nil, fmt.Errorf("unknown block mode %q", mode)
	}
	return out, nil
}

// feedbackState is the state of CFB and OFB between calls: the register
// the current block's keystream is made from, the keystream's bytes of the
// current block used so far (pos), and, for CFB, the ciphertext of the
// current block so far (the next register).
const feedbackState = 16 + 16 + 1

// streamCrypt runs a stream mode over data and returns the state to hand
// back with the next chunk followed by the output. For ctr, gcm, chacha20
// and chacha20-poly1305 the state is the byte offset reached (the JS side
// keeps it, so none is returned); for cfb, cfb8 and ofb it is opaque bytes
// ("" at the start). bits is ctr's counter width (Web Crypto's length).
func streamCrypt(mode string, encrypt bool, key, iv []byte, state string, data []byte, bits int) ([]byte, error) {
	switch mode {
	case "ctr", "gcm":
		offset, err := strconv.ParseUint(state, 10, 63)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an offset", mode, state)
		}
		b, err := blockCipher("aes", key)
		if err != nil {
			return nil, err
		}
		counter := make([]byte, 16)
		switch {
		case mode == "ctr":
			if len(iv) != 16 {
				return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
			}
			copy(counter, iv)
		case len(iv) == 12:
			// J0 is IV || 1, and the first block's counter inc32(J0).
			copy(counter, iv)
			counter[15] = 2
		default:
			// Any other IV length hashes into J0; Go computes it: the
			// keystream GCM seals a zero block with is E(inc32(J0)).
			if counter, err = gcmFirstCounter(b, iv); err != nil {
				return nil, err
			}
			bits = 32
		}
		if mode == "gcm" {
			bits = 32
		}
		addCounter(counter, offset/16, bits)
		out := make([]byte, len(data))
		ks := make([]byte, 16)
		pos := int(offset % 16)
		b.Encrypt(ks, counter)
		for i := range data {
			if pos == 16 {
				incCounter(counter, bits)
				b.Encrypt(ks, counter)
				pos = 0
			}
			out[i] = data[i] ^ ks[pos]
			pos++
		}
		return out, nil
	case "chacha20", "chacha20-poly1305":
		offset, err := strconv.ParseUint(state, 10, 63)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not an offset", mode, state)
		}
		nonce, first := iv, uint64(1)
		if mode == "chacha20" {
			// Node's (OpenSSL's) chacha20 IV is the block counter, little
			// endian, followed by the 12-byte nonce.
			if len(iv) != 16 {
				return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
			}
			nonce, first = iv[4:], uint64(binary.LittleEndian.Uint32(iv[:4]))
		}
		c, err := chacha20.NewUnauthenticatedCipher(key, nonce)
		if err != nil {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
		}
		block := first + offset/64
		if block > 1<<32-1 {
			return nil, &cryptoError{"ERR_OSSL_EVP_CIPHER_OPERATION_FAILED", "the ChaCha20 counter would wrap"}
		}
		c.SetCounter(uint32(block))
		skip := make([]byte, offset%64)
		c.XORKeyStream(skip, skip)
		out := make([]byte, len(data))
		c.XORKeyStream(out, data)
		return out, nil
	case "cfb", "cfb8", "ofb":
		b, err := blockCipher("aes", key)
		if err != nil {
			return nil, err
		}
		st := []byte(state)
		if len(st) == 0 {
			if len(iv) != 16 {
				return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
			}
			st = make([]byte, feedbackState)
			copy(st, iv)
		}
		if len(st) != feedbackState {
			return nil, fmt.Errorf("%s: the state is %d bytes, want %d", mode, len(st), feedbackState)
		}
		reg, next, pos := st[:16], st[16:32], int(st[32])
		out := make([]byte, feedbackState+len(data))
		res := out[feedbackState:]
		ks := make([]byte, 16)
		if mode == "cfb8" {
			for i, c := range data {
				b.Encrypt(ks, reg)
				res[i] = c ^ ks[0]
				ct := res[i]
				if !encrypt {
					ct = c
				}
				copy(reg, reg[1:])
				reg[15] = ct
			}
		} else {
			b.Encrypt(ks, reg)
			for i, c := range data {
				if pos == 16 {
					if mode == "ofb" {
						copy(reg, ks)
					} else {
						copy(reg, next)
					}
					b.Encrypt(ks, reg)
					pos = 0
				}
				res[i] = c ^ ks[pos]
				if encrypt {
					next[pos] = res[i]
				} else {
					next[pos] = c
				}
				pos++
			}
		}
		copy(out, reg)
		copy(out[16:], next)
		out[32] = byte(pos)
		return out, nil
	}
	return nil, fmt.Errorf("unknown stream mode %q", mode)
}

// gcmFirstCounter is inc32(J0) for an IV that is not 12 bytes, read back
// from the keystream Go's GCM seals a zero block with.
func gcmFirstCounter(b cipher.Block, iv []byte) ([]byte, error) {
	if len(iv) == 0 {
		return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
	}
	g, err := cipher.NewGCMWithNonceSize(b, len(iv))
	if err != nil {
		return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
	}
	sealed := g.Seal(nil, iv, make([]byte, 16), nil)
	counter := make([]byte, 16)
	b.Decrypt(counter, sealed[:16])
	return counter, nil
}

// incCounter adds one to the counter held in block's low bits bits,
// wrapping within them (the bits above are the nonce and do not change).
func incCounter(block []byte, bits int) {
	for i := len(block) - 1; bits > 0 && i >= 0; i-- {
		w := min(bits, 8)
		mask := byte(1<<w - 1)
		low := (block[i]&mask + 1) & mask
		block[i] = block[i]&^mask | low
		if low != 0 {
			return
		}
		bits -= w
	}
}

// addCounter adds n to the counter in block's low bits bits, wrapping.
func addCounter(block []byte, n uint64, bits int) {
	for i := len(block) - 1; bits > 0 && i >= 0 && n > 0; i-- {
		w := min(bits, 8)
		mask := uint64(1<<w - 1)
		sum := uint64(block[i])&mask + n&mask
		block[i] = block[i]&^byte(mask) | byte(sum&mask)
		n = n>>w + sum>>w
		bits -= w
	}
}

// aeadTag is the full 16-byte tag of an AEAD (gcm, chacha20-poly1305)
// over aad and the ciphertext of plaintext.
func aeadTag(mode string, key, iv, aad, plaintext []byte) ([]byte, error) {
	var a cipher.AEAD
	switch mode {
	case "gcm":
		b, err := blockCipher("aes", key)
		if err != nil {
			return nil, err
		}
		if len(iv) == 0 {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
		}
		if a, err = cipher.NewGCMWithNonceSize(b, len(iv)); err != nil {
			return nil, err
		}
	case "chacha20-poly1305":
		var err error
		if a, err = chacha20poly1305.New(key); err != nil {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_KEYLEN", "Invalid key length"}
		}
		if len(iv) != a.NonceSize() {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
		}
	default:
		return nil, fmt.Errorf("unknown AEAD %q", mode)
	}
	sealed := a.Seal(nil, iv, plaintext, aad)
	return sealed[len(plaintext):], nil
}

// keyWrapIV is RFC 3394's default initial value.
var keyWrapIV = []byte{0xa6, 0xa6, 0xa6, 0xa6, 0xa6, 0xa6, 0xa6, 0xa6}

// keyWrap runs the AES key wrap of RFC 3394 (wrap when encrypt, else
// unwrap, checking the initial value iv).
func keyWrap(encrypt bool, key, iv, data []byte) ([]byte, error) {
	b, err := blockCipher("aes", key)
	if err != nil {
		return nil, err
	}
	if len(iv) == 0 {
		iv = keyWrapIV
	}
	if len(iv) != 8 {
		return nil, &cryptoError{"ERR_CRYPTO_INVALID_IV", "Invalid initialization vector"}
	}
	min := 16
	if !encrypt {
		min = 24
	}
	if len(data)%8 != 0 || len(data) < min {
		return nil, &cryptoError{"ERR_OSSL_WRAP_MODE_NOT_ALLOWED", fmt.Sprintf("AES key wrap takes whole 8-byte blocks, at least %d bytes: got %d", min, len(data))}
	}
	var buf [16]byte
	if encrypt {
		n := len(data) / 8
		out := make([]byte, 8+len(data))
		copy(out, iv)
		copy(out[8:], data)
		a := out[:8]
		for j := range 6 {
			for i := 1; i <= n; i++ {
				copy(buf[:8], a)
				copy(buf[8:], out[8*i:8*i+8])
				b.Encrypt(buf[:], buf[:])
				t := uint64(n*j + i)
				binary.BigEndian.PutUint64(a, binary.BigEndian.Uint64(buf[:8])^t)
				copy(out[8*i:], buf[8:])
			}
		}
		return out, nil
	}
	n := len(data)/8 - 1
	a := make([]byte, 8)
	copy(a, data[:8])
	r := make([]byte, 8*n)
	copy(r, data[8:])
	for j := 5; j >= 0; j-- {
		for i := n; i >= 1; i-- {
			t := uint64(n*j + i)
			binary.BigEndian.PutUint64(buf[:8], binary.BigEndian.Uint64(a)^t)
			copy(buf[8:], r[8*(i-1):8*i])
			b.Decrypt(buf[:], buf[:])
			copy(a, buf[:8])
			copy(r[8*(i-1):], buf[8:])
		}
	}
	if subtle.ConstantTimeCompare(a, iv) != 1 {
		return nil, errBadDecrypt
	}
	return r, nil
}
