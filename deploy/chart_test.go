// Package deploy checks the deployment artefacts under deploy/: the Helm
// chart is rendered with helm (HELM, or helm on PATH; make deploy-check
// installs a pinned one) for each values file, every rendered object is
// decoded strictly into its Kubernetes API type, and the invariants that
// keep a placementd cluster safe are checked. It is a Go module of its own
// so that the Kubernetes API types stay out of placementd's go.mod.
package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "helm/placementd"

// valueSets are the renderings CI checks, the files of the chart's ci/
// directory: the defaults with the Keystone settings they need (the
// defaults alone refuse to render, TestChartAuthMustBeChosen), and the
// others.
var valueSets = []string{"ci/defaults-values.yaml", "ci/multizone-values.yaml", "ci/openstack-helm-values.yaml"}

func helmBin(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		return h
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		t.Fatal("helm not found: run make deploy-check, which installs the pinned one, or set HELM")
	}
	return h
}

// rendered is one helm template output, decoded.
type rendered struct {
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	configMaps   []*corev1.ConfigMap
	secrets      []*corev1.Secret
	pdbs         []*policyv1.PodDisruptionBudget
	jobs         []*batchv1.Job
	rules        []*monitoringv1.PrometheusRule
	monitors     []*monitoringv1.ServiceMonitor
}

// decodeStrict decodes JSON into v, failing on fields v's type lacks.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func render(t *testing.T, values string, set ...string) *rendered {
	t.Helper()
	out, err := helmTemplate(t, values, set...)
	if err != nil {
		t.Fatal(err)
	}
	r := &rendered{}
	for i, doc := range strings.Split(string(out), "\n---") {
		if strings.TrimSpace(strings.ReplaceAll(doc, "---", "")) == "" {
			continue
		}
		data, err := yaml.YAMLToJSONStrict([]byte(doc))
		if err != nil {
			t.Fatalf("document %d is not valid YAML: %v\n%s", i, err, doc)
		}
		var head struct{ APIVersion, Kind string }
		json.Unmarshal(data, &head)
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "apps/v1 StatefulSet":
			o := &appsv1.StatefulSet{}
			r.statefulSets, obj = append(r.statefulSets, o), o
		case "v1 Service":
			o := &corev1.Service{}
			r.services, obj = append(r.services, o), o
		case "v1 ConfigMap":
			o := &corev1.ConfigMap{}
			r.configMaps, obj = append(r.configMaps, o), o
		case "v1 Secret":
			o := &corev1.Secret{}
			r.secrets, obj = append(r.secrets, o), o
		case "policy/v1 PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			r.pdbs, obj = append(r.pdbs, o), o
		case "batch/v1 Job":
			o := &batchv1.Job{}
			r.jobs, obj = append(r.jobs, o), o
		case "monitoring.coreos.com/v1 PrometheusRule":
			o := &monitoringv1.PrometheusRule{}
			r.rules, obj = append(r.rules, o), o
		case "monitoring.coreos.com/v1 ServiceMonitor":
			o := &monitoringv1.ServiceMonitor{}
			r.monitors, obj = append(r.monitors, o), o
		default:
			t.Fatalf("document %d: %s %s is not a kind this test knows", i, head.APIVersion, head.Kind)
		}
		if err := decodeStrict(data, obj); err != nil {
			t.Fatalf("document %d (%s): %v\n%s", i, head.Kind, err, doc)
		}
	}
	return r
}

// helmTemplate runs helm template with a values file ("" for none) and
// --set assignments, and returns the rendering or helm's error.
func helmTemplate(t *testing.T, values string, set ...string) (string, error) {
	t.Helper()
	args := []string{"template", "p", chartDir, "--namespace", "openstack"}
	if values != "" {
		args = append(args, "-f", filepath.Join(chartDir, values))
	}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(helmBin(t), args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("helm %v: %v\n%s", args, err, stderr.String())
	}
	return string(out), nil
}

// The chart's defaults never install an unauthenticated API: with no
// values they refuse until Keystone is configured, and noauth2 renders
// only with its loudly named opt-in.
func TestChartAuthMustBeChosen(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  []string
		want string // in helm's error; "" renders
	}{
		{"defaults", nil, "auth.strategy keystone (the default) needs keystone.authURL"},
		{"noauth2 without the opt-in", []string{"auth.strategy=noauth2"}, "auth.iUnderstandNoauth2IsUnauthenticated=true"},
		{"noauth2 with the opt-in", []string{"auth.strategy=noauth2", "auth.iUnderstandNoauth2IsUnauthenticated=true"}, ""},
		{"keystone configured", []string{"keystone.authURL=http://keystone:5000/v3", "keystone.password=x"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helmTemplate(t, "", tc.set...)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("helm template: %v, want a refusal saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			noauth2 := strings.Contains(out, "auth-strategy: noauth2")
			if want := slices.Contains(tc.set, "auth.strategy=noauth2"); noauth2 != want {
				t.Errorf("noauth2 rendered: %v, want %v", noauth2, want)
			}
		})
	}
}

func TestHelmLint(t *testing.T) {
	for _, values := range valueSets {
		args := []string{"lint", "--strict", chartDir}
		if values != "" {
			args = append(args, "-f", filepath.Join(chartDir, values))
		}
		if out, err := exec.Command(helmBin(t), args...).CombinedOutput(); err != nil {
			t.Errorf("helm %v: %v\n%s", args, err, out)
		}
	}
}

// The invariants of every rendering.
func TestChartInvariants(t *testing.T) {
	for _, values := range valueSets {
		name := strings.TrimSuffix(filepath.Base(values), "-values.yaml")
		t.Run(name, func(t *testing.T) {
			r := render(t, values)
			checkInvariants(t, r)
		})
	}
}

func checkInvariants(t *testing.T, r *rendered) {
	if len(r.statefulSets) == 0 {
		t.Fatal("no StatefulSet")
	}
	// The headless Service publishes not-ready addresses: a pod must be
	// reachable by its name to join and catch up, before it is ready.
	headless := map[string]*corev1.Service{}
	for _, s := range r.services {
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless[s.Name] = s
			if !s.Spec.PublishNotReadyAddresses {
				t.Errorf("headless Service %s does not publish not-ready addresses", s.Name)
			}
		}
	}
	composeImage := composeImage(t)
	var voters *appsv1.StatefulSet
	for _, ss := range r.statefulSets {
		if headless[ss.Spec.ServiceName] == nil {
			t.Errorf("%s: serviceName %q is not a headless Service of the chart", ss.Name, ss.Spec.ServiceName)
		}
		if ss.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
			t.Errorf("%s: pods start one by one: voters waiting for each other never start", ss.Name)
		}
		pod := ss.Spec.Template.Spec
		for _, c := range pod.Containers {
			if c.Image != composeImage {
				t.Errorf("%s: image %q, docker-compose.yml runs %q", ss.Name, c.Image, composeImage)
			}
			if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
				t.Errorf("%s: readiness is not /readyz: %+v", ss.Name, p)
			}
			// A liveness probe would restart a node that is slow only
			// because it catches up; the startup probe asks only that
			// the process answers HTTP.
			if c.LivenessProbe != nil {
				t.Errorf("%s: has a liveness probe %+v", ss.Name, c.LivenessProbe)
			}
			if p := c.StartupProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
				t.Errorf("%s: startup probe is not /healthz: %+v", ss.Name, p)
			}
			for _, e := range c.Env {
				if strings.HasPrefix(e.Name, "PLACEMENTD_") && e.Value != "" {
					t.Errorf("%s: %s given as a literal value", ss.Name, e.Name)
				}
			}
			checkShutdown(t, ss, c)
		}
		if ss.Labels["app.kubernetes.io/component"] == "voter" {
			voters = ss
		}
	}
	if voters == nil {
		t.Fatal("no voter StatefulSet")
	}
	checkJoin(t, r, voters)

	// The voters' PDB keeps a quorum.
	replicas := int(*voters.Spec.Replicas)
	found := false
	for _, pdb := range r.pdbs {
		if pdb.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "voter" {
			continue
		}
		found = true
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() < replicas/2+1 {
			t.Errorf("PDB %s: minAvailable %v for %d voters, quorum is %d", pdb.Name, pdb.Spec.MinAvailable, replicas, replicas/2+1)
		}
		for k, v := range pdb.Spec.Selector.MatchLabels {
			if voters.Spec.Template.Labels[k] != v {
				t.Errorf("PDB %s does not select the voters (%s=%s)", pdb.Name, k, v)
			}
		}
	}
	if !found {
		t.Error("no PodDisruptionBudget for the voters")
	}

	// No secret in a ConfigMap: none of the rendered Secrets' values, and
	// no setting that is a secret.
	for _, cm := range r.configMaps {
		for key, text := range cm.Data {
			for _, s := range r.secrets {
				for name, v := range s.Data {
					if len(v) >= 4 && strings.Contains(text, string(v)) {
						t.Errorf("ConfigMap %s/%s holds the value of Secret %s/%s", cm.Name, key, s.Name, name)
					}
				}
			}
			for _, setting := range []string{"cluster-secret", "keystone-password", "metrics-token", "password ="} {
				if strings.Contains(text, setting) {
					t.Errorf("ConfigMap %s/%s sets %s", cm.Name, key, setting)
				}
			}
		}
	}
	if len(r.rules) > 0 {
		checkAlerts(t, r.rules[0])
	}
	for _, sm := range r.monitors {
		if sm.Spec.JobLabel == "" {
			t.Errorf("ServiceMonitor %s: no jobLabel; docs/alerts.yml matches job=\"placementd\"", sm.Name)
		}
		checkScrapeCredential(t, r, sm)
	}
}

// A ServiceMonitor scrapes with the metrics token, the one the pods are
// given, never with the cluster secret.
func checkScrapeCredential(t *testing.T, r *rendered, sm *monitoringv1.ServiceMonitor) {
	for _, ep := range sm.Spec.Endpoints {
		a := ep.Authorization
		if a == nil || a.Credentials == nil || a.Credentials.Key != "metrics-token" {
			t.Errorf("ServiceMonitor %s: endpoint %s scrapes without the metrics token: %+v", sm.Name, ep.Port, a)
			continue
		}
		for _, ss := range r.statefulSets {
			given := false
			for _, e := range ss.Spec.Template.Spec.Containers[0].Env {
				if e.Name == "PLACEMENTD_METRICS_TOKEN" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
					e.ValueFrom.SecretKeyRef.Name == a.Credentials.Name && e.ValueFrom.SecretKeyRef.Key == a.Credentials.Key {
					given = true
				}
			}
			if !given {
				t.Errorf("%s: pods are not given the token the ServiceMonitor scrapes with (%s/%s)", ss.Name, a.Credentials.Name, a.Credentials.Key)
			}
		}
	}
}

// composeImage is the image docker-compose.yml's nodes run.
func composeImage(t *testing.T) string {
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Node struct {
			Image string `json:"image"`
		} `json:"x-node"`
	}
	if err := yaml.Unmarshal(data, &compose); err != nil || compose.Node.Image == "" {
		t.Fatalf("docker-compose.yml: no x-node image (%v)", err)
	}
	return compose.Node.Image
}

func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// The pod leaves the cluster within its grace period.
func checkShutdown(t *testing.T, ss *appsv1.StatefulSet, c corev1.Container) {
	if v, _ := flagValue(c.Args, "leave-on-shutdown"); !containsArg(c.Args, "--leave-on-shutdown") && v != "true" {
		t.Errorf("%s: pods do not leave the cluster on SIGTERM: scaling down would leave dead voters", ss.Name)
	}
	v, _ := flagValue(c.Args, "shutdown-timeout")
	secs, err := strconv.Atoi(strings.TrimSuffix(v, "s"))
	grace := ss.Spec.Template.Spec.TerminationGracePeriodSeconds
	if err != nil || grace == nil || int64(secs) >= *grace {
		t.Errorf("%s: --shutdown-timeout %q is not within the grace period %v", ss.Name, v, grace)
	}
}

func containsArg(args []string, arg string) bool {
	for _, a := range args {
		if a == arg {
			return true
		}
	}
	return false
}

// Every pod joins through the voters that form the cluster, named by
// their stable DNS names under the headless Service; the voters form it
// with --bootstrap-expect, as many as --join lists.
func checkJoin(t *testing.T, r *rendered, voters *appsv1.StatefulSet) {
	domain := fmt.Sprintf("%s.%s.svc.cluster.local", voters.Spec.ServiceName, voters.Namespace)
	for _, ss := range r.statefulSets {
		args := ss.Spec.Template.Spec.Containers[0].Args
		join, _ := flagValue(args, "join")
		addrs := strings.Split(join, ",")
		for i, a := range addrs {
			if want := fmt.Sprintf("%s-%d.%s:8778", voters.Name, i, domain); a != want {
				t.Errorf("%s: --join %s, want %s", ss.Name, a, want)
			}
		}
		if adv, _ := flagValue(args, "http-advertise"); adv != "$(POD_NAME)."+domain+":8778" {
			t.Errorf("%s: --http-advertise %q", ss.Name, adv)
		}
		expect, ok := flagValue(args, "bootstrap-expect")
		if ss == voters {
			if n, _ := strconv.Atoi(expect); !ok || n != len(addrs) || n > int(*voters.Spec.Replicas) {
				t.Errorf("%s: --bootstrap-expect %q with %d addresses to join and %d voters", ss.Name, expect, len(addrs), *voters.Spec.Replicas)
			}
		} else if ok || !containsArg(args, "--non-voter") {
			t.Errorf("%s: read replicas must join as non-voters and never bootstrap", ss.Name)
		}
	}
}

// The PrometheusRule is docs/alerts.yml, through the chart's copy.
func checkAlerts(t *testing.T, rule *monitoringv1.PrometheusRule) {
	docs, err := os.ReadFile("../docs/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(chartDir, "files/alerts.yml"))
	if err != nil || !bytes.Equal(docs, copied) {
		t.Fatalf("%s/files/alerts.yml differs from docs/alerts.yml: cp docs/alerts.yml %s/files/", chartDir, chartDir)
	}
	var want monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(docs, &want); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(rule.Spec)
	exp, _ := json.Marshal(want)
	if !bytes.Equal(got, exp) {
		t.Errorf("PrometheusRule differs from docs/alerts.yml:\n%s\n%s", got, exp)
	}
}

// The flags and settings the chart gives placementd are ones the binary
// (the image's) knows: `placementd serve ARGS --help` reads the settings
// file strictly and parses the arguments before it prints the help.
func TestChartFlagsAreKnown(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "placementd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/placementd")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	emptyConf := filepath.Join(dir, "placement.conf")
	os.WriteFile(emptyConf, nil, 0o600)
	for _, values := range valueSets {
		r := render(t, values)
		settings := filepath.Join(dir, "placementd.yaml")
		for _, cm := range r.configMaps {
			if text, ok := cm.Data["placementd.yaml"]; ok {
				os.WriteFile(settings, []byte(text), 0o600)
			}
		}
		for _, ss := range r.statefulSets {
			var args []string
			for _, a := range ss.Spec.Template.Spec.Containers[0].Args {
				a = strings.ReplaceAll(a, "$(POD_NAME)", ss.Name+"-0")
				switch {
				case strings.HasPrefix(a, "--config="):
					a = "--config=" + settings
				case strings.HasPrefix(a, "--config-file="):
					a = "--config-file=" + emptyConf
				}
				args = append(args, a)
			}
			if args[0] != "serve" {
				t.Fatalf("%s: args %v do not start with serve", ss.Name, args)
			}
			cmd := exec.Command(bin, append(args, "--help")...)
			cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s (%s): placementd %v: %v\n%s", ss.Name, values, args, err, lastLines(out, 5))
			}
		}
	}
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
