package jshost

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// Asymmetric keys as the crypto operations see them. A key crosses every
// call as DER (a private key as PKCS #8, a public key as SPKI), parsed here
// on use and marshalled back in Go's canonical form, so that two records of
// one key are the same bytes (KeyObject.equals compares them).

// asymKey is a parsed asymmetric key; priv is nil for a public key.
type asymKey struct {
	// kty is Node's asymmetricKeyType: rsa, rsa-pss, ec, ed25519 or x25519.
	kty string
	// priv is an *rsa.PrivateKey, *ecdsa.PrivateKey, ed25519.PrivateKey or
	// an X25519 *ecdh.PrivateKey; pub the matching public key.
	priv any
	pub  any
	// pss holds an rsa-pss key's restrictions (nil when it has none).
	pss *pssParams
}

// pssParams are the RSASSA-PSS parameters an rsa-pss key may carry
// (RFC 4055): the hashes, by Node's names, and the minimum salt length.
type pssParams struct {
	hash, mgf1 string
	saltLength int
}

// keyRecord is a key as the JS side keeps it.
type keyRecord struct {
	Type    string     `json:"type"` // "public" or "private"
	Kty     string     `json:"kty"`
	DER     string     `json:"der"` // latin1: PKCS #8 or SPKI
	Details keyDetails `json:"details"`
}

// keyDetails is KeyObject.asymmetricKeyDetails (publicExponent in decimal:
// the JS side makes it a BigInt).
type keyDetails struct {
	ModulusLength     int    `json:"modulusLength,omitempty"`
	PublicExponent    string `json:"publicExponent,omitempty"`
	HashAlgorithm     string `json:"hashAlgorithm,omitempty"`
	MGF1HashAlgorithm string `json:"mgf1HashAlgorithm,omitempty"`
	SaltLength        *int   `json:"saltLength,omitempty"`
	NamedCurve        string `json:"namedCurve,omitempty"`
}

var (
	oidRSA    = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 1}
	oidRSAPSS = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 10}
	oidMGF1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 1, 8}
)

// hashOIDs are the hashes an RSASSA-PSS key's parameters may name.
var hashOIDs = map[string]asn1.ObjectIdentifier{
	"sha1":       {1, 3, 14, 3, 2, 26},
	"sha224":     {2, 16, 840, 1, 101, 3, 4, 2, 4},
	"sha256":     {2, 16, 840, 1, 101, 3, 4, 2, 1},
	"sha384":     {2, 16, 840, 1, 101, 3, 4, 2, 2},
	"sha512":     {2, 16, 840, 1, 101, 3, 4, 2, 3},
	"sha512-224": {2, 16, 840, 1, 101, 3, 4, 2, 5},
	"sha512-256": {2, 16, 840, 1, 101, 3, 4, 2, 6},
}

// namedCurves maps every name Node accepts for a curve to Go's curve and
// the name asymmetricKeyDetails gives (OpenSSL's).
var namedCurves = map[string]struct {
	curve      elliptic.Curve
	node, nist string
}{
	"P-256":      {elliptic.P256(), "prime256v1", "P-256"},
	"prime256v1": {elliptic.P256(), "prime256v1", "P-256"},
	"secp256r1":  {elliptic.P256(), "prime256v1", "P-256"},
	"P-384":      {elliptic.P384(), "secp384r1", "P-384"},
	"secp384r1":  {elliptic.P384(), "secp384r1", "P-384"},
	"P-521":      {elliptic.P521(), "secp521r1", "P-521"},
	"secp521r1":  {elliptic.P521(), "secp521r1", "P-521"},
}

func curveNames(c elliptic.Curve) (node, nist string) {
	switch c {
	case elliptic.P256():
		return "prime256v1", "P-256"
	case elliptic.P384():
		return "secp384r1", "P-384"
	case elliptic.P521():
		return "secp521r1", "P-521"
	}
	return "", ""
}

// errDecoder is OpenSSL's answer, through Node, to key data it cannot read.
var errDecoder = &cryptoError{"ERR_OSSL_UNSUPPORTED", "error:1E08010C:DECODER routines::unsupported"}

// newAsymKey classifies a key Go parsed.
func newAsymKey(k any) (*asymKey, error) {
	switch k := k.(type) {
	case *rsa.PrivateKey:
		return &asymKey{kty: "rsa", priv: k, pub: &k.PublicKey}, nil
	case *rsa.PublicKey:
		return &asymKey{kty: "rsa", pub: k}, nil
	case *ecdsa.PrivateKey:
		return &asymKey{kty: "ec", priv: k, pub: &k.PublicKey}, nil
	case *ecdsa.PublicKey:
		return &asymKey{kty: "ec", pub: k}, nil
	case ed25519.PrivateKey:
		return &asymKey{kty: "ed25519", priv: k, pub: k.Public()}, nil
	case ed25519.PublicKey:
		return &asymKey{kty: "ed25519", pub: k}, nil
	case *ecdh.PrivateKey:
		if k.Curve() == ecdh.X25519() {
			return &asymKey{kty: "x25519", priv: k, pub: k.PublicKey()}, nil
		}
	case *ecdh.PublicKey:
		if k.Curve() == ecdh.X25519() {
			return &asymKey{kty: "x25519", pub: k}, nil
		}
	}
	return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf("wasmgate's crypto does not support %T keys (it has RSA, RSA-PSS, EC P-256/384/521, Ed25519 and X25519)", k)}
}

// public is the key's public half.
func (k *asymKey) public() *asymKey {
	return &asymKey{kty: k.kty, pub: k.pub, pss: k.pss}
}

// record is k as the JS side keeps it.
func (k *asymKey) record() (keyRecord, error) {
	r := keyRecord{Type: "public", Kty: k.kty}
	var der []byte
	var err error
	if k.priv != nil {
		r.Type = "private"
		der, err = k.pkcs8()
	} else {
		der, err = k.spki()
	}
	if err != nil {
		return r, err
	}
	r.DER = latin1String(der)
	switch pub := k.pub.(type) {
	case *rsa.PublicKey:
		r.Details.ModulusLength = pub.N.BitLen()
		r.Details.PublicExponent = strconv.Itoa(pub.E)
		if k.pss != nil {
			r.Details.HashAlgorithm, r.Details.MGF1HashAlgorithm = k.pss.hash, k.pss.mgf1
			r.Details.SaltLength = &k.pss.saltLength
		}
	case *ecdsa.PublicKey:
		r.Details.NamedCurve, _ = curveNames(pub.Curve)
	}
	return r, nil
}

func (k *asymKey) pkcs8() ([]byte, error) {
	if k.kty == "rsa-pss" {
		type privateKeyInfo struct {
			Version    int
			Algorithm  pkix.AlgorithmIdentifier
			PrivateKey []byte
		}
		return asn1.Marshal(privateKeyInfo{Algorithm: k.pssAlgorithm(), PrivateKey: x509.MarshalPKCS1PrivateKey(k.priv.(*rsa.PrivateKey))})
	}
	return x509.MarshalPKCS8PrivateKey(k.priv)
}

func (k *asymKey) spki() ([]byte, error) {
	if k.kty == "rsa-pss" {
		pub := x509.MarshalPKCS1PublicKey(k.pub.(*rsa.PublicKey))
		return asn1.Marshal(struct {
			Algorithm pkix.AlgorithmIdentifier
			PublicKey asn1.BitString
		}{k.pssAlgorithm(), asn1.BitString{Bytes: pub, BitLength: 8 * len(pub)}})
	}
	return x509.MarshalPKIXPublicKey(k.pub)
}

// pssParamsASN1 is RSASSA-PSS-params (RFC 4055); DER leaves out the
// defaults (SHA-1, MGF1 with SHA-1, a 20-byte salt).
type pssParamsASN1 struct {
	Hash       pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:0"`
	MGF        pkix.AlgorithmIdentifier `asn1:"optional,explicit,tag:1"`
	SaltLength int                      `asn1:"optional,explicit,tag:2,default:20"`
}

func (k *asymKey) pssAlgorithm() pkix.AlgorithmIdentifier {
	alg := pkix.AlgorithmIdentifier{Algorithm: oidRSAPSS}
	if k.pss == nil {
		return alg
	}
	var p pssParamsASN1
	// OpenSSL writes the hashes' parameters as NULL; so does this, for
	// the same bytes.
	if k.pss.hash != "sha1" {
		p.Hash = pkix.AlgorithmIdentifier{Algorithm: hashOIDs[k.pss.hash], Parameters: asn1.NullRawValue}
	}
	if k.pss.mgf1 != "sha1" {
		inner, _ := asn1.Marshal(pkix.AlgorithmIdentifier{Algorithm: hashOIDs[k.pss.mgf1], Parameters: asn1.NullRawValue})
		p.MGF = pkix.AlgorithmIdentifier{Algorithm: oidMGF1, Parameters: asn1.RawValue{FullBytes: inner}}
	}
	p.SaltLength = k.pss.saltLength
	b, _ := asn1.Marshal(p)
	alg.Parameters = asn1.RawValue{FullBytes: b}
	return alg
}

// parsePSSAlgorithm reads an id-RSASSA-PSS AlgorithmIdentifier's
// parameters (nil when absent: the key is not restricted).
func parsePSSAlgorithm(alg pkix.AlgorithmIdentifier) (*pssParams, error) {
	if len(alg.Parameters.FullBytes) == 0 {
		return nil, nil
	}
	var p pssParamsASN1
	if rest, err := asn1.Unmarshal(alg.Parameters.FullBytes, &p); err != nil || len(rest) > 0 {
		return nil, errDecoder
	}
	out := &pssParams{hash: "sha1", mgf1: "sha1", saltLength: p.SaltLength}
	name := func(oid asn1.ObjectIdentifier) (string, bool) {
		for n, o := range hashOIDs {
			if o.Equal(oid) {
				return n, true
			}
		}
		return "", false
	}
	var ok bool
	if len(p.Hash.Algorithm) > 0 {
		if out.hash, ok = name(p.Hash.Algorithm); !ok {
			return nil, errDecoder
		}
	}
	if len(p.MGF.Algorithm) > 0 {
		var inner pkix.AlgorithmIdentifier
		if !p.MGF.Algorithm.Equal(oidMGF1) {
			return nil, errDecoder
		}
		if _, err := asn1.Unmarshal(p.MGF.Parameters.FullBytes, &inner); err != nil {
			return nil, errDecoder
		}
		if out.mgf1, ok = name(inner.Algorithm); !ok {
			return nil, errDecoder
		}
	}
	return out, nil
}

// parsePKCS8 reads a PKCS #8 private key, including the id-RSASSA-PSS
// keys Go's x509 does not know.
func parsePKCS8(der []byte) (*asymKey, error) {
	var info struct {
		Version    int
		Algorithm  pkix.AlgorithmIdentifier
		PrivateKey []byte
	}
	if _, err := asn1.Unmarshal(der, &info); err == nil && info.Algorithm.Algorithm.Equal(oidRSAPSS) {
		pss, err := parsePSSAlgorithm(info.Algorithm)
		if err != nil {
			return nil, err
		}
		k, err := x509.ParsePKCS1PrivateKey(info.PrivateKey)
		if err != nil {
			return nil, keyError(err)
		}
		return &asymKey{kty: "rsa-pss", priv: k, pub: &k.PublicKey, pss: pss}, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, keyError(err)
	}
	return newAsymKey(k)
}

// parseSPKI reads a SubjectPublicKeyInfo, including id-RSASSA-PSS keys.
func parseSPKI(der []byte) (*asymKey, error) {
	var info struct {
		Algorithm pkix.AlgorithmIdentifier
		PublicKey asn1.BitString
	}
	if _, err := asn1.Unmarshal(der, &info); err == nil && info.Algorithm.Algorithm.Equal(oidRSAPSS) {
		pss, err := parsePSSAlgorithm(info.Algorithm)
		if err != nil {
			return nil, err
		}
		k, err := x509.ParsePKCS1PublicKey(info.PublicKey.RightAlign())
		if err != nil {
			return nil, keyError(err)
		}
		return &asymKey{kty: "rsa-pss", pub: k, pss: pss}, nil
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, keyError(err)
	}
	return newAsymKey(k)
}

// keyError says why Go refused key bytes: Go's reason when it is one a
// user can act on (an RSA key too short for Go, a curve Go lacks), else
// what OpenSSL answers through Node.
func keyError(err error) error {
	msg := err.Error()
	for _, known := range []string{"insecure", "unsupported elliptic curve", "unknown public key algorithm", "unknown elliptic curve"} {
		if strings.Contains(msg, known) {
			return &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", "wasmgate's crypto cannot use this key: " + msg}
		}
	}
	return errDecoder
}

// parseKey reads key data as createPrivateKey (want "private") or
// createPublicKey (want "public", which takes a private key too) reads it:
// format is pem, der or jwk; typ (der only) pkcs1, pkcs8, sec1 or spki.
func parseKey(want, format, typ string, data []byte) (*asymKey, error) {
	var k *asymKey
	var err error
	switch format {
	case "pem":
		k, err = parsePEM(want, data)
	case "der":
		k, err = parseDER(want, typ, data)
	case "jwk":
		k, err = parseJWK(want, data)
	default:
		return nil, fmt.Errorf("unknown key format %q", format)
	}
	if err != nil {
		return nil, err
	}
	if want == "public" && k.priv != nil {
		k = k.public()
	}
	if want == "private" && k.priv == nil {
		return nil, errDecoder
	}
	return k, nil
}

func parseDER(want, typ string, der []byte) (*asymKey, error) {
	switch typ {
	case "pkcs8":
		return parsePKCS8(der)
	case "sec1":
		k, err := x509.ParseECPrivateKey(der)
		if err != nil {
			return nil, keyError(err)
		}
		return newAsymKey(k)
	case "spki":
		return parseSPKI(der)
	case "pkcs1":
		if want == "private" {
			k, err := x509.ParsePKCS1PrivateKey(der)
			if err != nil {
				return nil, keyError(err)
			}
			return newAsymKey(k)
		}
		// createPublicKey reads PKCS #1 public keys and, failing that,
		// private ones.
		if k, err := x509.ParsePKCS1PublicKey(der); err == nil {
			return newAsymKey(k)
		}
		k, err := x509.ParsePKCS1PrivateKey(der)
		if err != nil {
			return nil, keyError(err)
		}
		return newAsymKey(k)
	}
	return nil, fmt.Errorf("unknown DER key type %q", typ)
}

// parsePEM reads the first PEM block that holds a key (a certificate
// gives its public key).
func parsePEM(want string, data []byte) (*asymKey, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errDecoder
		}
		if _, ok := block.Headers["Proc-Type"]; ok || block.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", "wasmgate's crypto does not read encrypted private keys: decrypt the key before handing it over"}
		}
		switch block.Type {
		case "PRIVATE KEY":
			return parseDER(want, "pkcs8", block.Bytes)
		case "RSA PRIVATE KEY":
			return parseDER("private", "pkcs1", block.Bytes)
		case "EC PRIVATE KEY":
			return parseDER(want, "sec1", block.Bytes)
		case "PUBLIC KEY":
			if want == "private" {
				return nil, errDecoder
			}
			return parseDER(want, "spki", block.Bytes)
		case "RSA PUBLIC KEY":
			if want == "private" {
				return nil, errDecoder
			}
			k, err := x509.ParsePKCS1PublicKey(block.Bytes)
			if err != nil {
				return nil, keyError(err)
			}
			return newAsymKey(k)
		case "CERTIFICATE":
			if want == "private" {
				return nil, errDecoder
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, keyError(err)
			}
			return newAsymKey(cert.PublicKey)
		}
	}
}

// exportKey encodes a key as KeyObject.export does: format pem or der,
// typ pkcs1, pkcs8, sec1 or spki, or format jwk (JSON text).
func exportKey(k *asymKey, format, typ string) ([]byte, error) {
	if format == "jwk" {
		return k.jwk()
	}
	var der []byte
	var err error
	var label string
	switch typ {
	case "pkcs8":
		label = "PRIVATE KEY"
		der, err = k.pkcs8()
	case "spki":
		label = "PUBLIC KEY"
		der, err = k.spki()
	case "pkcs1":
		switch {
		case k.kty != "rsa":
			return nil, &cryptoError{"ERR_CRYPTO_INCOMPATIBLE_KEY_OPTIONS", "The selected key encoding pkcs1 can only be used for RSA keys."}
		case k.priv != nil:
			label, der = "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k.priv.(*rsa.PrivateKey))
		default:
			label, der = "RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(k.pub.(*rsa.PublicKey))
		}
	case "sec1":
		if k.kty != "ec" {
			return nil, &cryptoError{"ERR_CRYPTO_INCOMPATIBLE_KEY_OPTIONS", "The selected key encoding sec1 can only be used for EC keys."}
		}
		label = "EC PRIVATE KEY"
		der, err = x509.MarshalECPrivateKey(k.priv.(*ecdsa.PrivateKey))
	default:
		return nil, fmt.Errorf("unknown key encoding %q", typ)
	}
	if err != nil {
		return nil, err
	}
	if format == "der" {
		return der, nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: label, Bytes: der}), nil
}

// ---- JSON Web Keys -------------------------------------------------------

// The JWK members in the order Node writes them.
type (
	rsaJWK struct {
		Kty string `json:"kty"`
		N   string `json:"n"`
		E   string `json:"e"`
		D   string `json:"d,omitempty"`
		P   string `json:"p,omitempty"`
		Q   string `json:"q,omitempty"`
		DP  string `json:"dp,omitempty"`
		DQ  string `json:"dq,omitempty"`
		QI  string `json:"qi,omitempty"`
	}
	ecJWK struct {
		Kty string `json:"kty"`
		X   string `json:"x"`
		Y   string `json:"y"`
		Crv string `json:"crv"`
		D   string `json:"d,omitempty"`
	}
	okpJWK struct {
		Crv string `json:"crv"`
		D   string `json:"d,omitempty"`
		X   string `json:"x"`
		Kty string `json:"kty"`
	}
)

var b64url = base64.RawURLEncoding

func (k *asymKey) jwk() ([]byte, error) {
	enc := func(b []byte) string { return b64url.EncodeToString(b) }
	switch k.kty {
	case "rsa":
		pub := k.pub.(*rsa.PublicKey)
		j := rsaJWK{Kty: "RSA", N: enc(pub.N.Bytes()), E: enc(big.NewInt(int64(pub.E)).Bytes())}
		if priv, ok := k.priv.(*rsa.PrivateKey); ok {
			if len(priv.Primes) != 2 {
				return nil, &cryptoError{"ERR_CRYPTO_JWK_UNSUPPORTED_KEY_TYPE", "Unsupported JWK Key Type."}
			}
			j.D, j.P, j.Q = enc(priv.D.Bytes()), enc(priv.Primes[0].Bytes()), enc(priv.Primes[1].Bytes())
			j.DP, j.DQ, j.QI = enc(priv.Precomputed.Dp.Bytes()), enc(priv.Precomputed.Dq.Bytes()), enc(priv.Precomputed.Qinv.Bytes())
		}
		return json.Marshal(j)
	case "ec":
		pub := k.pub.(*ecdsa.PublicKey)
		point, err := pub.Bytes()
		if err != nil {
			return nil, err
		}
		size := (len(point) - 1) / 2
		_, crv := curveNames(pub.Curve)
		j := ecJWK{Kty: "EC", X: enc(point[1 : 1+size]), Y: enc(point[1+size:]), Crv: crv}
		if priv, ok := k.priv.(*ecdsa.PrivateKey); ok {
			d, err := priv.Bytes()
			if err != nil {
				return nil, err
			}
			j.D = enc(d)
		}
		return json.Marshal(j)
	case "ed25519":
		j := okpJWK{Crv: "Ed25519", X: enc(k.pub.(ed25519.PublicKey)), Kty: "OKP"}
		if priv, ok := k.priv.(ed25519.PrivateKey); ok {
			j.D = enc(priv.Seed())
		}
		return json.Marshal(j)
	case "x25519":
		j := okpJWK{Crv: "X25519", X: enc(k.pub.(*ecdh.PublicKey).Bytes()), Kty: "OKP"}
		if priv, ok := k.priv.(*ecdh.PrivateKey); ok {
			j.D = enc(priv.Bytes())
		}
		return json.Marshal(j)
	}
	return nil, &cryptoError{"ERR_CRYPTO_JWK_UNSUPPORTED_KEY_TYPE", "Unsupported JWK Key Type."}
}

// parseJWK reads an RSA, EC or OKP JSON Web Key (the JS side has checked
// its members' types, as Node does, and handles "oct").
func parseJWK(want string, data []byte) (*asymKey, error) {
	var j map[string]any
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("JWK is not JSON: %w", err)
	}
	str := func(name string) string { s, _ := j[name].(string); return s }
	bytesOf := func(name string) ([]byte, error) {
		// Node decodes JWK members as base64, which takes base64url too.
		s := str(name)
		b, err := b64url.DecodeString(trimPadding(s))
		if err != nil {
			if b, err = base64.StdEncoding.DecodeString(s); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	bigOf := func(name string) (*big.Int, error) {
		b, err := bytesOf(name)
		return new(big.Int).SetBytes(b), err
	}
	private := want == "private"
	switch str("kty") {
	case "RSA":
		invalid := &cryptoError{"ERR_CRYPTO_INVALID_JWK", "Invalid JWK RSA key"}
		n, err1 := bigOf("n")
		e, err2 := bigOf("e")
		if err := errors.Join(err1, err2); err != nil || n.Sign() == 0 || !e.IsInt64() || e.Int64() > 1<<31-1 {
			return nil, invalid
		}
		pub := &rsa.PublicKey{N: n, E: int(e.Int64())}
		if !private {
			return &asymKey{kty: "rsa", pub: pub}, nil
		}
		var parts [6]*big.Int
		var errs []error
		for i, name := range []string{"d", "p", "q", "dp", "dq", "qi"} {
			var err error
			parts[i], err = bigOf(name)
			errs = append(errs, err)
		}
		if errors.Join(errs...) != nil {
			return nil, invalid
		}
		priv := &rsa.PrivateKey{PublicKey: *pub, D: parts[0], Primes: []*big.Int{parts[1], parts[2]}}
		priv.Precompute()
		if err := priv.Validate(); err != nil {
			return nil, invalid
		}
		if priv.Precomputed.Dp.Cmp(parts[3]) != 0 || priv.Precomputed.Dq.Cmp(parts[4]) != 0 || priv.Precomputed.Qinv.Cmp(parts[5]) != 0 {
			return nil, invalid
		}
		return &asymKey{kty: "rsa", priv: priv, pub: &priv.PublicKey}, nil
	case "EC":
		invalid := &cryptoError{"ERR_CRYPTO_INVALID_JWK", "Invalid JWK EC key"}
		c, ok := namedCurves[str("crv")]
		if !ok || str("crv") != c.nist {
			return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf("wasmgate's crypto does not support the curve %q (it has P-256, P-384 and P-521)", str("crv"))}
		}
		x, err1 := bytesOf("x")
		y, err2 := bytesOf("y")
		size := (c.curve.Params().BitSize + 7) / 8
		if errors.Join(err1, err2) != nil || len(x) != size || len(y) != size {
			return nil, invalid
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(c.curve, append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, invalid
		}
		if !private {
			return newAsymKey(pub)
		}
		d, err := bytesOf("d")
		if err != nil || len(d) != size {
			return nil, invalid
		}
		priv, err := ecdsa.ParseRawPrivateKey(c.curve, d)
		if err != nil || !priv.PublicKey.Equal(pub) {
			return nil, invalid
		}
		return newAsymKey(priv)
	case "OKP":
		invalid := &cryptoError{"ERR_CRYPTO_INVALID_JWK", "Invalid JWK data"}
		crv := str("crv")
		if crv != "Ed25519" && crv != "X25519" {
			return nil, &cryptoError{"ERR_FEATURE_UNAVAILABLE_ON_PLATFORM", fmt.Sprintf("wasmgate's crypto does not support %s keys (it has Ed25519 and X25519)", crv)}
		}
		name := "x"
		if private {
			name = "d"
		}
		raw, err := bytesOf(name)
		if err != nil || len(raw) != 32 {
			return nil, invalid
		}
		return rawOKPKey(crv, private, raw)
	}
	return nil, &cryptoError{"ERR_CRYPTO_INVALID_JWK", "Invalid JWK data"}
}

func trimPadding(s string) string {
	for len(s) > 0 && s[len(s)-1] == '=' {
		s = s[:len(s)-1]
	}
	return s
}

// rawOKPKey makes an Ed25519 or X25519 key from its 32 raw bytes (the
// seed or scalar of a private key, the point of a public one).
func rawOKPKey(crv string, private bool, raw []byte) (*asymKey, error) {
	if len(raw) != 32 {
		return nil, &cryptoError{"ERR_CRYPTO_INVALID_KEYLEN", crv + " keys are 32 bytes"}
	}
	switch {
	case crv == "Ed25519" && private:
		return newAsymKey(ed25519.NewKeyFromSeed(raw))
	case crv == "Ed25519":
		return newAsymKey(ed25519.PublicKey(bytes.Clone(raw)))
	case private:
		k, err := ecdh.X25519().NewPrivateKey(raw)
		if err != nil {
			return nil, errDecoder
		}
		return newAsymKey(k)
	default:
		k, err := ecdh.X25519().NewPublicKey(raw)
		if err != nil {
			return nil, errDecoder
		}
		return newAsymKey(k)
	}
}

// rawPublicKey reads a public key from its raw form (Web Crypto's "raw"
// format): an EC point (uncompressed or compressed) on namedCurve, or the
// 32 bytes of an Ed25519 or X25519 key.
func rawPublicKey(kty, namedCurve string, raw []byte) (*asymKey, error) {
	switch kty {
	case "ec":
		c, ok := namedCurves[namedCurve]
		if !ok {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_CURVE", "Invalid EC curve name"}
		}
		if len(raw) > 0 && (raw[0] == 2 || raw[0] == 3) {
			x, y := elliptic.UnmarshalCompressed(c.curve, raw)
			if x == nil {
				return nil, errDecoder
			}
			raw = elliptic.Marshal(c.curve, x, y)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(c.curve, raw)
		if err != nil {
			return nil, errDecoder
		}
		return newAsymKey(pub)
	case "ed25519":
		return rawOKPKey("Ed25519", false, raw)
	case "x25519":
		return rawOKPKey("X25519", false, raw)
	}
	return nil, fmt.Errorf("no raw form for %s keys", kty)
}

// rawPrivateKey makes a private key from its raw form: an EC scalar
// (big-endian, the curve's size) on namedCurve, or the 32-byte seed or
// scalar of an Ed25519 or X25519 key.
func rawPrivateKey(kty, namedCurve string, raw []byte) (*asymKey, error) {
	switch kty {
	case "ec":
		c, ok := namedCurves[namedCurve]
		if !ok {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_CURVE", "Invalid EC curve name"}
		}
		k, err := ecdsa.ParseRawPrivateKey(c.curve, raw)
		if err != nil {
			return nil, &cryptoError{"ERR_CRYPTO_INVALID_KEYTYPE", "Private key is not valid for specified curve."}
		}
		return newAsymKey(k)
	case "ed25519":
		return rawOKPKey("Ed25519", true, raw)
	case "x25519":
		return rawOKPKey("X25519", true, raw)
	}
	return nil, fmt.Errorf("no raw form for %s keys", kty)
}

// rawPublic is the raw form of a key's public half (see rawPublicKey);
// compressed selects an EC point's compressed form.
func (k *asymKey) rawPublic(compressed bool) ([]byte, error) {
	switch pub := k.pub.(type) {
	case *ecdsa.PublicKey:
		if compressed {
			return elliptic.MarshalCompressed(pub.Curve, pub.X, pub.Y), nil
		}
		return pub.Bytes()
	case ed25519.PublicKey:
		return bytes.Clone(pub), nil
	case *ecdh.PublicKey:
		return pub.Bytes(), nil
	}
	return nil, &cryptoError{"ERR_INVALID_ARG_VALUE", "a " + k.kty + " key has no raw form"}
}

// signer is the crypto.Signer of a private key, for the operations that
// take one.
func (k *asymKey) signer() (crypto.Signer, bool) {
	s, ok := k.priv.(crypto.Signer)
	return s, ok
}
