// Package k8s checks the Kubernetes manifests of deploy/k8s: each
// document is decoded strictly into the k8s.io/api type of its kind, so
// a misspelt or misplaced field, a wrong type or an unknown kind fails,
// and the deployments are checked for what docs/operations.md promises
// (probes on /healthz and /readyz, a non-root user, a grace period for
// the savepoint). It is a module of its own, so that the Kubernetes
// types weigh on no user of Weir; scripts/test.sh runs it.
package k8s

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kinds maps apiVersion/kind to a new value of its type.
var kinds = map[string]func() any{
	"v1/ConfigMap":                  func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                     func() any { return new(corev1.Secret) },
	"v1/Service":                    func() any { return new(corev1.Service) },
	"v1/ServiceAccount":             func() any { return new(corev1.ServiceAccount) },
	"v1/PersistentVolumeClaim":      func() any { return new(corev1.PersistentVolumeClaim) },
	"apps/v1/Deployment":            func() any { return new(appsv1.Deployment) },
	"apps/v1/StatefulSet":           func() any { return new(appsv1.StatefulSet) },
	"policy/v1/PodDisruptionBudget": func() any { return new(policyv1.PodDisruptionBudget) },
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decode strictly decodes every document of a manifest file.
func decode(data []byte) ([]any, error) {
	var out []any
	for i, doc := range docSep.Split(string(data), -1) {
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		mk := kinds[tm.APIVersion+"/"+tm.Kind]
		if mk == nil {
			return nil, fmt.Errorf("document %d: unknown kind %s/%s", i+1, tm.APIVersion, tm.Kind)
		}
		v := mk()
		if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i+1, tm.Kind, err)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no documents")
	}
	return out, nil
}

func stripComments(doc string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func manifests(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("*", "*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	return files
}

// TestManifests decodes every manifest strictly and checks each
// Deployment's pod: probes, user, grace period, the REST port.
func TestManifests(t *testing.T) {
	for _, f := range manifests(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode(data)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		deployments := 0
		for _, o := range objs {
			d, ok := o.(*appsv1.Deployment)
			if !ok {
				continue
			}
			deployments++
			checkPod(t, f+": "+d.Name, d.Spec.Template.Spec, strings.Contains(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), "-mode service"))
			if d.Spec.Selector == nil || d.Spec.Selector.MatchLabels["app.kubernetes.io/name"] != d.Spec.Template.Labels["app.kubernetes.io/name"] {
				t.Errorf("%s: the selector does not match the pod's labels", f)
			}
		}
		if deployments != 1 {
			t.Errorf("%s: %d deployments, want 1", f, deployments)
		}
	}
}

func checkPod(t *testing.T, where string, p corev1.PodSpec, service bool) {
	t.Helper()
	if len(p.Containers) != 1 {
		t.Fatalf("%s: %d containers", where, len(p.Containers))
	}
	c := p.Containers[0]
	probe := func(name string, pr *corev1.Probe, path string) {
		if pr == nil || pr.HTTPGet == nil || pr.HTTPGet.Path != path || pr.HTTPGet.Port.String() != "rest" {
			t.Errorf("%s: %s probe is not GET %s on the rest port: %+v", where, name, path, pr)
		}
	}
	probe("liveness", c.LivenessProbe, "/healthz")
	probe("readiness", c.ReadinessProbe, "/readyz")
	if len(c.Ports) != 1 || c.Ports[0].Name != "rest" || c.Ports[0].ContainerPort != 8081 || !strings.Contains(strings.Join(c.Args, " "), "-rest 0.0.0.0:8081") {
		t.Errorf("%s: the rest port is not the job's -rest 0.0.0.0:8081: %+v %v", where, c.Ports, c.Args)
	}
	if sc := p.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("%s: not run as the image's non-root user 65532", where)
	}
	tokenFromSecret := false
	for _, e := range c.Env {
		tokenFromSecret = tokenFromSecret || e.Name == "WEIR_REST_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil
	}
	if !tokenFromSecret {
		t.Errorf("%s: WEIR_REST_TOKEN does not come from a Secret (the REST server on 0.0.0.0 needs a token)", where)
	}
	g := p.TerminationGracePeriodSeconds
	switch {
	case g == nil:
		t.Errorf("%s: no terminationGracePeriodSeconds", where)
	case service && *g < 600:
		// The stop with a savepoint may take up to the checkpoint
		// timeout (10 min by default).
		t.Errorf("%s: terminationGracePeriodSeconds %d is shorter than the default checkpoint timeout", where, *g)
	}
}

// TestMisspeltFieldFails: the validation is strict: a misspelt field, a
// field at the wrong level or an unknown kind is an error.
func TestMisspeltFieldFails(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("single", "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decode(data); err != nil {
		t.Fatalf("the manifest itself: %v", err)
	}
	for _, c := range []struct{ from, to string }{
		{"containerPort: 8081", "containerPorts: 8081"},
		{"terminationGracePeriodSeconds:", "terminationGracePeriodSecond:"},
		{"readinessProbe:", "readynessProbe:"},
		{"kind: Deployment", "kind: Deploymnet"},
		{"replicas: 1", "replicas: one"},
	} {
		bad := strings.Replace(string(data), c.from, c.to, 1)
		if bad == string(data) {
			t.Fatalf("%q is not in the manifest", c.from)
		}
		if _, err := decode([]byte(bad)); err == nil {
			t.Errorf("%q accepted", c.to)
		} else {
			t.Logf("%s: %v", c.to, err)
		}
	}
}
