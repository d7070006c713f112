package e2e

// TLS through the connection string: the plugin connects to a server whose
// certificate its CA (tlsCAFile) signed, with a client certificate
// (tlsCertificateKeyFile) the server checks, and refuses a server its CA
// did not sign, saying why.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fluent-bit-out-mongodb/out_mongodb/test/harness"
	"github.com/fluent-bit-out-mongodb/out_mongodb/test/mongotest"
)

// authority is a CA made for a test.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate, PEM
}

func newAuthority(t *testing.T, dir, name string) *authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, name+".pem")
	writePEM(t, file, "CERTIFICATE", der)
	return &authority{cert: cert, key: key, file: file}
}

// issue makes a certificate signed by a for a server on 127.0.0.1 or a
// client, and writes it and its key as PEM files: cert and key apart, and
// both in one file (as tlsCertificateKeyFile wants).
func (a *authority) issue(t *testing.T, dir, name string, usage x509.ExtKeyUsage) (cert, key, both string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &k.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, both = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pem")
	writePEM(t, cert, "CERTIFICATE", der)
	writePEM(t, key, "EC PRIVATE KEY", keyDER)
	writePEM(t, both, "CERTIFICATE", der)
	f, err := os.OpenFile(both, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pem.Encode(f, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}); err != nil {
		t.Fatal(err)
	}
	return cert, key, both
}

func writePEM(t *testing.T, file, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tlsURI is the connection string of a TLS server at addr for a client
// trusting caFile and showing the certificate in certKeyFile.
func tlsURI(addr, caFile, certKeyFile string) string {
	q := url.Values{"tls": {"true"}, "tlsCAFile": {caFile}, "tlsCertificateKeyFile": {certKeyFile}}
	return "mongodb://" + addr + "/?" + q.Encode()
}

func TestTLS(t *testing.T) {
	if _, real := mongotest.External(); real {
		t.Skip("MONGO_URI is set: this test runs the in-process test server with certificates it makes")
	}
	dir := t.TempDir()
	ca, other := newAuthority(t, dir, "ca"), newAuthority(t, dir, "other-ca")
	serverCert, serverKey, _ := ca.issue(t, dir, "server", x509.ExtKeyUsageServerAuth)
	_, _, client := ca.issue(t, dir, "client", x509.ExtKeyUsageClientAuth)
	addr := freeAddr(t)
	srv, err := mongotest.StartFerretTLS(t.TempDir(), addr, mongotest.TLSFiles{Cert: serverCert, Key: serverKey, CA: ca.file})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	srv.URI = tlsURI(addr, ca.file, client)
	name := srv.Database(t)
	e := &env{t: t, srv: srv, dbName: name, db: srv.Client(t).Database(name), host: startHost(t)}

	// Fluent Bit initialises every output before the first flush.
	e.init("trusted", e.props())
	e.init("untrusted", e.props("uri", tlsURI(addr, other.file, client), "flush_timeout", "2s", "connect_timeout", "2s"))

	e.mustFlush("trusted", "app.log", fixture("chunk-app-json-5000.msgpack"))
	if got := len(checkBuckets(t, e.all("logs"), limits{1000, 1 << 20})); got != 5000 {
		t.Errorf("%d entries stored over TLS, want 5000", got)
	}

	if rc := e.flush("untrusted", "app.log", fixture("chunk-dummy-3.msgpack")); rc != harness.FLBRetry {
		t.Errorf("flush to a server the CA did not sign: rc %d, want FLB_RETRY", rc)
	}
	if !waitLog(e.host, "certificate signed by unknown authority") {
		t.Errorf("the log does not say the server's certificate is not signed by the CA:\n%s", e.host.Stderr())
	}
	e.exit("trusted")
	e.exit("untrusted")
}
