package kafka

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Security is how a client reaches brokers that require encryption or
// authentication: TLS (nil: plaintext) and a SASL mechanism (nil: none).
// franz-go's mechanisms all fit: scram.Auth{...}.AsSha256Mechanism(),
// plain.Auth{...}.AsMechanism(), oauth.Oauth(tokenFunc) for OAUTHBEARER,
// and aws.ManagedStreamingIAM(credsFunc) for AWS MSK IAM. Build it in
// code, or from a Kafka client's properties with SecurityFromProperties.
type Security struct {
	TLS  *tls.Config
	SASL sasl.Mechanism
}

// WithSecurity connects to the brokers with TLS and SASL (Source and
// Sink). A job in a cluster reaches the brokers through the cluster's
// clients as well: give it the same Security (kafkacluster.WithSecurity).
func WithSecurity(s Security) Option {
	return func(c *config) { c.opts = append(c.opts, s.ClientOptions()...) }
}

// ClientOptions returns the franz-go client options of s.
func (s Security) ClientOptions() []kgo.Opt {
	var opts []kgo.Opt
	if s.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(s.TLS.Clone()))
	}
	if s.SASL != nil {
		opts = append(opts, kgo.SASL(s.SASL))
	}
	return opts
}

// SecurityFromProperties reads the security settings of a Kafka client's
// properties, as a Java client (and Flink's Kafka connector, with their
// "properties." prefix removed) or librdkafka takes them, so that a
// team's existing client configuration works unchanged:
//
//	security.protocol                      PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL
//	sasl.mechanism                         PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (default PLAIN, as Kafka's)
//	sasl.jaas.config                       ...LoginModule required username="u" password="p";
//	sasl.username, sasl.password           librdkafka's form of the same
//	ssl.truststore.location                the CA certificates, PEM (ssl.truststore.type PEM)
//	ssl.truststore.certificates            the same, inline
//	ssl.ca.location                        librdkafka's form of the same
//	ssl.keystore.location                  the client's certificate chain and key, PEM (ssl.keystore.type PEM)
//	ssl.keystore.certificate.chain, ssl.keystore.key   the same, inline
//	ssl.certificate.location, ssl.key.location         librdkafka's form of the same
//	ssl.endpoint.identification.algorithm  "" turns host name verification off (default https)
//
// Without a trust store the system's CAs are trusted. JKS and PKCS12
// stores are refused with a message (convert them to PEM), as are
// mechanisms that need code (OAUTHBEARER, AWS_MSK_IAM: build Security
// with franz-go's oauth or aws package) and any other "ssl." or "sasl."
// key, so that a setting is never ignored in silence. Keys that are not
// about security (bootstrap.servers, group.id, ...) are ignored.
func SecurityFromProperties(props map[string]string) (Security, error) {
	var s Security
	var errs []error
	known := map[string]bool{"security.protocol": true, "sasl.mechanism": true, "sasl.jaas.config": true,
		"sasl.username": true, "sasl.password": true, "ssl.truststore.location": true, "ssl.truststore.certificates": true,
		"ssl.truststore.type": true, "ssl.ca.location": true, "ssl.keystore.location": true, "ssl.keystore.type": true,
		"ssl.keystore.certificate.chain": true, "ssl.keystore.key": true, "ssl.certificate.location": true,
		"ssl.key.location": true, "ssl.endpoint.identification.algorithm": true}
	for k := range props {
		if (strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.")) && !known[k] {
			errs = append(errs, fmt.Errorf("%s is not supported", k))
		}
	}
	protocol := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	var useTLS, useSASL bool
	switch protocol {
	case "", "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		errs = append(errs, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"]))
	}
	if useTLS {
		cfg, err := tlsFromProperties(props)
		if err != nil {
			errs = append(errs, err)
		}
		s.TLS = cfg
	} else if hasAny(props, "ssl.truststore.location", "ssl.truststore.certificates", "ssl.ca.location", "ssl.keystore.location", "ssl.certificate.location") {
		errs = append(errs, fmt.Errorf("TLS settings are given but security.protocol is %s: use SSL or SASL_SSL", orDefault(protocol, "PLAINTEXT")))
	}
	if useSASL {
		m, err := saslFromProperties(props)
		if err != nil {
			errs = append(errs, err)
		}
		s.SASL = m
	} else if hasAny(props, "sasl.mechanism", "sasl.jaas.config", "sasl.username") {
		errs = append(errs, fmt.Errorf("SASL settings are given but security.protocol is %s: use SASL_PLAINTEXT or SASL_SSL", orDefault(protocol, "PLAINTEXT")))
	}
	if len(errs) > 0 {
		return Security{}, fmt.Errorf("kafka security properties: %w", errors.Join(errs...))
	}
	return s, nil
}

// ReadProperties reads a Java properties file of "key=value" (or
// "key: value", "key value") lines; lines starting with # or ! are
// comments and a line ending in a backslash continues on the next.
// Unicode escapes are not decoded.
func ReadProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var line strings.Builder
	for sc.Scan() {
		t := strings.TrimLeft(sc.Text(), " \t\f")
		if line.Len() == 0 && (t == "" || t[0] == '#' || t[0] == '!') {
			continue
		}
		if strings.HasSuffix(t, `\`) && !strings.HasSuffix(t, `\\`) {
			line.WriteString(t[:len(t)-1])
			continue
		}
		line.WriteString(t)
		k, v := splitProperty(line.String())
		props[k] = v
		line.Reset()
	}
	if line.Len() > 0 {
		k, v := splitProperty(line.String())
		props[k] = v
	}
	return props, sc.Err()
}

// splitProperty splits a properties line at its first unescaped '=', ':'
// or white space.
func splitProperty(l string) (string, string) {
	for i := 0; i < len(l); i++ {
		switch l[i] {
		case '\\':
			i++
		case '=', ':', ' ', '\t':
			v := strings.TrimLeft(l[i+1:], " \t\f")
			if l[i] == ' ' || l[i] == '\t' {
				v = strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(v, "="), ":"), " \t\f")
			}
			return l[:i], v
		}
	}
	return l, ""
}

func hasAny(props map[string]string, keys ...string) bool {
	for _, k := range keys {
		if props[k] != "" {
			return true
		}
	}
	return false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// pemOf returns the inline PEM value of key, or the contents of the file
// named by the first of files that is set.
func pemOf(props map[string]string, inline string, files ...string) ([]byte, string, error) {
	if v := props[inline]; v != "" {
		return []byte(v), inline, nil
	}
	for _, f := range files {
		if p := props[f]; p != "" {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, f, fmt.Errorf("%s: %w", f, err)
			}
			return b, f, nil
		}
	}
	return nil, "", nil
}

func tlsFromProperties(props map[string]string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	var errs []error
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := props[k]; t != "" && !strings.EqualFold(t, "PEM") {
			errs = append(errs, fmt.Errorf("%s %s: only PEM stores are read (convert it: keytool -exportcert -rfc, or openssl pkcs12 -nodes)", k, t))
		}
	}
	ca, key, err := pemOf(props, "ssl.truststore.certificates", "ssl.truststore.location", "ssl.ca.location")
	switch {
	case err != nil:
		errs = append(errs, err)
	case ca != nil:
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			errs = append(errs, fmt.Errorf("%s holds no PEM certificate", key))
		}
		cfg.RootCAs = pool
	}
	chain, chainKey, err := pemOf(props, "ssl.keystore.certificate.chain", "ssl.keystore.location", "ssl.certificate.location")
	if err != nil {
		errs = append(errs, err)
	}
	priv, _, err := pemOf(props, "ssl.keystore.key", "ssl.key.location")
	if err != nil {
		errs = append(errs, err)
	}
	if chain != nil {
		if priv == nil {
			priv = chain // Java's PEM key store: the key and the chain in one file
		}
		cert, err := tls.X509KeyPair(chain, priv)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: the client certificate and key: %w", chainKey, err))
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if a, ok := props["ssl.endpoint.identification.algorithm"]; ok {
		switch strings.ToLower(strings.TrimSpace(a)) {
		case "":
			cfg.InsecureSkipVerify = true
			cfg.VerifyConnection = verifyChainOnly(cfg)
		case "https":
		default:
			errs = append(errs, fmt.Errorf("ssl.endpoint.identification.algorithm %q: want https or empty", a))
		}
	}
	return cfg, errors.Join(errs...)
}

// verifyChainOnly checks the broker's certificate chain against the
// configured (or system) roots without checking its host name, as Kafka
// does with an empty ssl.endpoint.identification.algorithm.
func verifyChainOnly(cfg *tls.Config) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the broker sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: cfg.RootCAs, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// jaasField matches key="value" in a JAAS configuration.
var jaasField = regexp.MustCompile(`(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"`)

func saslFromProperties(props map[string]string) (sasl.Mechanism, error) {
	user, pass := props["sasl.username"], props["sasl.password"]
	if j := props["sasl.jaas.config"]; j != "" {
		for _, m := range jaasField.FindAllStringSubmatch(j, -1) {
			v := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(m[2])
			switch m[1] {
			case "username":
				user = v
			case "password":
				pass = v
			}
		}
	}
	mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
	if mech == "" {
		mech = "PLAIN"
	}
	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	case "OAUTHBEARER", "AWS_MSK_IAM":
		return nil, fmt.Errorf("sasl.mechanism %s needs a token or credentials provider: build Security with franz-go's oauth.Oauth or aws.ManagedStreamingIAM", mech)
	default:
		return nil, fmt.Errorf("sasl.mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", props["sasl.mechanism"])
	}
	if user == "" || pass == "" {
		return nil, fmt.Errorf("sasl.mechanism %s needs a user name and a password (sasl.jaas.config, or sasl.username and sasl.password)", mech)
	}
	switch mech {
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
}
