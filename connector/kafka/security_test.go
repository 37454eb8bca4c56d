package kafka_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// secureProps are a Java client's properties for the test broker's TLS and
// SASL listener, as a team would have them in a client.properties file.
func secureProps(caFile, mechanism, password string) string {
	return `# the test broker's TLS and SASL listener
security.protocol=SASL_SSL
sasl.mechanism=` + mechanism + `
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="weir" password="` + password + `";
ssl.truststore.type=PEM
ssl.truststore.location=` + caFile + `
`
}

func security(t *testing.T, props string) kafka.Security {
	t.Helper()
	m, err := kafka.ReadProperties(strings.NewReader(props))
	if err != nil {
		t.Fatal(err)
	}
	s, err := kafka.SecurityFromProperties(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestKafkaTLSSCRAM reads and writes through the test broker's TLS
// listener with SCRAM-SHA-256 (the properties form of a Java client): a
// job reads a topic over TLS and writes it exactly once over TLS, and a
// read_committed reader finds every record once. The listener speaks
// only TLS with SASL, so a client that ignored the settings could not
// connect; a wrong password and an untrusted CA fail the job with the
// broker's or TLS's reason.
func TestKafkaTLSSCRAM(t *testing.T) {
	plainAddr := broker(t)
	addr, caFile := kafkatest.SecureBroker(t)
	sec := security(t, secureProps(caFile, "SCRAM-SHA-256", "weir-secret"))

	in, out := newTopic(t, plainAddr, 2), newTopic(t, plainAddr, 2)
	cl := manual(t, plainAddr)
	var want []string
	for i := range 400 {
		v := itoa(i)
		want = append(want, v)
		produce(t, cl, rec(in, int32(i%2), v, int64(i)))
	}
	slices.Sort(want)

	env := weir.NewEnvironment(weir.WithParallelism(2))
	env.EnableCheckpointing(50 * time.Millisecond)
	src := weir.FromDynamicSource(env, kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(in),
		kafka.WithBounded(kafka.Latest()), kafka.WithSecurity(sec)), weir.NoWatermarks[string](), "in")
	kafka.NewSink(kafka.StringValues(), kafka.WithBrokers(addr), kafka.WithDefaultTopic(out), kafka.WithSecurity(sec),
		kafka.WithDeliveryGuarantee(kafka.ExactlyOnce), kafka.WithTransactionalIDPrefix(out)).To(src).UID("out")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Execute(ctx, "tls-scram"); err != nil {
		t.Fatal(err)
	}
	got := values(readAll(t, plainAddr, out, true))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("read %d records back, want the %d written, once each", len(got), len(want))
	}

	for _, c := range []struct {
		name, props, want string
	}{
		{"wrong password", secureProps(caFile, "SCRAM-SHA-256", "not-the-password"), "SASL"},
		{"untrusted CA", strings.ReplaceAll(secureProps(caFile, "SCRAM-SHA-256", "weir-secret"),
			"ssl.truststore.type=PEM\nssl.truststore.location="+caFile+"\n", ""), "certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sec := security(t, c.props)
			env := weir.NewEnvironment(weir.WithParallelism(1))
			src := weir.FromDynamicSource(env, kafka.NewSource(kafka.String(), kafka.WithBrokers(addr), kafka.WithTopics(in),
				kafka.WithBounded(kafka.Latest()), kafka.WithSecurity(sec), kafka.WithRequestTimeout(10*time.Second)), weir.NoWatermarks[string](), "in")
			weir.Discard(src)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := env.Execute(ctx, "tls-scram-refused")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want a failure naming %s", err, c.want)
			}
		})
	}
}

// TestKafkaSecurityMechanisms: SCRAM-SHA-512 and PLAIN (librdkafka's
// property names, a CA file and a client properties file on disk) reach
// the TLS listener too.
func TestKafkaSecurityMechanisms(t *testing.T) {
	addr, caFile := kafkatest.SecureBroker(t)
	for _, props := range []string{
		secureProps(caFile, "SCRAM-SHA-512", "weir-secret"),
		"security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=weir\nsasl.password=weir-secret\nssl.ca.location=" + caFile + "\n",
	} {
		path := filepath.Join(t.TempDir(), "client.properties")
		if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m, err := kafka.ReadProperties(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		sec, err := kafka.SecurityFromProperties(m)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, sec.ClientOptions()...)...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = cl.Ping(ctx)
		cancel()
		cl.Close()
		if err != nil {
			t.Errorf("%s: %v", m["sasl.mechanism"], err)
		}
	}
}

// TestSecurityFromPropertiesRefuses: a setting that would be ignored is
// an error naming it, before anything connects.
func TestSecurityFromPropertiesRefuses(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"security.protocol": "SASL_SSL"}, "needs a user name and a password"},
		{map[string]string{"security.protocol": "TLS"}, `security.protocol "TLS"`},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "JKS", "ssl.truststore.location": "x.jks"}, "only PEM stores"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "oauth.Oauth"},
		{map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.username": "u", "sasl.password": "p"}, `sasl.mechanism "GSSAPI"`},
		{map[string]string{"sasl.mechanism": "PLAIN", "sasl.username": "u"}, "security.protocol is PLAINTEXT"},
		{map[string]string{"security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
		{map[string]string{"security.protocol": "SSL", "ssl.cipher.suites": "X"}, "ssl.cipher.suites is not supported"},
		{map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"}, "want https or empty"},
	} {
		_, err := kafka.SecurityFromProperties(c.props)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want %q", c.props, err, c.want)
		}
	}
	s, err := kafka.SecurityFromProperties(map[string]string{"bootstrap.servers": "b:9092", "group.id": "g"})
	if err != nil || s.TLS != nil || s.SASL != nil || len(s.ClientOptions()) != 0 {
		t.Errorf("plaintext properties: %+v, %v, want no security and no error", s, err)
	}
}

// TestReadProperties: comments, separators and continued lines of Java's
// properties format.
func TestReadProperties(t *testing.T) {
	m, err := kafka.ReadProperties(strings.NewReader("# c\n! c\n  a=1\nb : 2\nc 3\nd=x \\\n   y\ne=\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "b": "2", "c": "3", "d": "x y", "e": ""}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %q, want %q", k, m[k], v)
		}
	}
	if len(m) != len(want) {
		t.Errorf("read %v, want %v", m, want)
	}
}
