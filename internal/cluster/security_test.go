package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests in this file show that a deployment's credentials go through
// the NATS client's own options: an nkey seed file (Options.NKey), and a
// client certificate with the CA servers are checked against (TLSCert,
// TLSKey, TLSCA), against servers that insist on them.

// startSecuredServer starts an embedded JetStream server with o's
// authentication and TLS settings, shut down when t ends, and returns its
// client URL.
func startSecuredServer(t *testing.T, o server.Options) string {
	t.Helper()
	o.Host = "127.0.0.1"
	o.Port = -1
	o.JetStream = true
	o.StoreDir = t.TempDir()
	o.NoLog = true
	o.NoSigs = true
	s, err := server.NewServer(&o)
	require.NoError(t, err)
	go s.Start()
	if !s.ReadyForConnections(60 * time.Second) {
		s.Shutdown()
		t.Fatal("nats server: not ready for connections within 60s")
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s.ClientURL()
}

// connectAndSetUp connects with o and lays the deployment out, as every
// command does first.
func connectAndSetUp(t *testing.T, o Options) {
	t.Helper()
	c, err := Connect(o)
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, c.Setup(ctx, Layout{Memory: true}))
	_, _, err = PublishedActions(ctx, c)
	require.ErrorIs(t, err, ErrNoRegistry, "a JetStream deployment reached, nothing published yet")
}

// writeUserSeed creates an nkey user and writes its seed to a file, as
// `nsc` or `nk -gen user` would; it returns the user's public key and the
// file.
func writeUserSeed(t *testing.T) (pub, seedFile string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, err = kp.PublicKey()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	seedFile = filepath.Join(t.TempDir(), "user.nk")
	require.NoError(t, os.WriteFile(seedFile, append(seed, '\n'), 0o600))
	return pub, seedFile
}

// TestSecurityNKey: a server that knows one nkey user lets in a client
// with that user's seed file, which can then lay out the deployment; a
// client without it, or with another user's seed, is refused with an
// authorization error.
func TestSecurityNKey(t *testing.T) {
	t.Parallel()
	pub, seed := writeUserSeed(t)
	_, otherSeed := writeUserSeed(t)
	url := startSecuredServer(t, server.Options{Nkeys: []*server.NkeyUser{{Nkey: pub}}})

	connectAndSetUp(t, Options{URL: url, NKey: seed})

	for name, o := range map[string]Options{
		"no credentials":     {URL: url},
		"another user's key": {URL: url, NKey: otherSeed},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Connect(o)
			if c != nil {
				c.Close()
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, nats.ErrAuthorization)
			assert.Contains(t, err.Error(), "nats "+url+": ")
		})
	}

	t.Run("no seed file", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "missing.nk")
		_, err := Connect(Options{URL: url, NKey: missing})
		require.Error(t, err)
		assert.ErrorIs(t, err, os.ErrNotExist)
		assert.Contains(t, err.Error(), "nats nkey "+missing+": ")
	})
}

// tlsFiles are the PEM files of a test PKI.
type tlsFiles struct {
	ca, serverCert, serverKey, clientCert, clientKey string
	// otherCA signs nothing here: a CA the server's certificate does not
	// chain to.
	otherCA string
}

// writePKI generates a CA, a server certificate for 127.0.0.1 and a client
// certificate it signs (ECDSA P-256), and another CA, as PEM files.
func writePKI(t *testing.T) tlsFiles {
	t.Helper()
	dir := t.TempDir()
	serial := int64(0)
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return path
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	template := func(cn string) *x509.Certificate {
		serial++
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
		}
	}
	newCA := func(cn string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key := newKey()
		tmpl := template(cn)
		tmpl.IsCA = true
		tmpl.BasicConstraintsValid = true
		tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		require.NoError(t, err)
		cert, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return cert, key, der
	}
	leaf := func(name, cn string, usage x509.ExtKeyUsage, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string) {
		key := newKey()
		tmpl := template(cn)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{usage}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return write(name+".pem", "CERTIFICATE", der), write(name+"-key.pem", "EC PRIVATE KEY", keyDER)
	}

	ca, caKey, caDER := newCA("wasmgate test CA")
	var f tlsFiles
	f.ca = write("ca.pem", "CERTIFICATE", caDER)
	f.serverCert, f.serverKey = leaf("server", "nats server", x509.ExtKeyUsageServerAuth, ca, caKey)
	f.clientCert, f.clientKey = leaf("client", "wasmgate worker", x509.ExtKeyUsageClientAuth, ca, caKey)
	_, _, otherDER := newCA("another CA")
	f.otherCA = write("other-ca.pem", "CERTIFICATE", otherDER)
	return f
}

// TestSecurityTLS: a server that requires TLS and verifies client
// certificates lets in a client with a certificate its CA signed, which
// can then lay out the deployment; a client without a certificate, or one
// that does not trust the server's CA, is refused.
func TestSecurityTLS(t *testing.T) {
	t.Parallel()
	pki := writePKI(t)
	tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: pki.serverCert, KeyFile: pki.serverKey, CaFile: pki.ca, Verify: true})
	require.NoError(t, err)
	url := startSecuredServer(t, server.Options{TLS: true, TLSConfig: tc, TLSVerify: true})
	require.True(t, strings.HasPrefix(url, "tls://"), url)
	plain := "nats://" + strings.TrimPrefix(url, "tls://")

	connectAndSetUp(t, Options{URL: url, TLSCert: pki.clientCert, TLSKey: pki.clientKey, TLSCA: pki.ca})

	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		// The server refuses during the handshake; the client reads that
		// alert, or (when its first write races the close) a closed
		// connection after the handshake: both say TLS stopped it.
		{"no client certificate", Options{URL: url, TLSCA: pki.ca}, "tls"},
		{"the server's CA not trusted", Options{URL: url, TLSCert: pki.clientCert, TLSKey: pki.clientKey, TLSCA: pki.otherCA}, "certificate signed by unknown authority"},
		// The client follows the server to TLS, but trusts only the
		// system's CAs then.
		{"no TLS options", Options{URL: plain}, "certificate signed by unknown authority"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Connect(tt.o)
			if c != nil {
				c.Close()
			}
			require.Error(t, err, "connected without what the server requires")
			assert.Contains(t, err.Error(), "nats "+tt.o.URL+": ")
			assert.Contains(t, err.Error(), tt.want)
		})
	}

	t.Run("a certificate without its key", func(t *testing.T) {
		_, err := Connect(Options{URL: url, TLSCert: pki.clientCert, TLSCA: pki.ca})
		require.EqualError(t, err, "nats TLS: a client certificate needs its key, and a key its certificate")
		_, err = Connect(Options{URL: url, TLSKey: pki.clientKey, TLSCA: pki.ca})
		require.EqualError(t, err, "nats TLS: a client certificate needs its key, and a key its certificate")
	})

	t.Run("a CA file that is missing", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "none.pem")
		_, err := Connect(Options{URL: url, TLSCert: pki.clientCert, TLSKey: pki.clientKey, TLSCA: missing})
		require.Error(t, err)
		assert.ErrorIs(t, err, os.ErrNotExist)
		assert.Contains(t, err.Error(), missing)
	})
}
