package main

// Kubernetes manifests decoded strictly into the real API types, and the
// public endpoint (Gateway API by default, Ingress as the alternative)
// checked against the Service, the Deployment and the Slack app manifest.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// kubeTypes are the API types of every kind deploy/kubernetes may hold.
var kubeTypes = map[string]reflect.Type{
	"v1/Service":                                reflect.TypeFor[corev1.Service](),
	"v1/Secret":                                 reflect.TypeFor[corev1.Secret](),
	"v1/ConfigMap":                              reflect.TypeFor[corev1.ConfigMap](),
	"apps/v1/Deployment":                        reflect.TypeFor[appsv1.Deployment](),
	"apps/v1/StatefulSet":                       reflect.TypeFor[appsv1.StatefulSet](),
	"policy/v1/PodDisruptionBudget":             reflect.TypeFor[policyv1.PodDisruptionBudget](),
	"networking.k8s.io/v1/Ingress":              reflect.TypeFor[networkingv1.Ingress](),
	"networking.k8s.io/v1/NetworkPolicy":        reflect.TypeFor[networkingv1.NetworkPolicy](),
	"gateway.networking.k8s.io/v1/Gateway":      reflect.TypeFor[gatewayv1.Gateway](),
	"gateway.networking.k8s.io/v1/HTTPRoute":    reflect.TypeFor[gatewayv1.HTTPRoute](),
	"gateway.networking.k8s.io/v1/GRPCRoute":    reflect.TypeFor[gatewayv1.GRPCRoute](),
	"gateway.networking.k8s.io/v1/GatewayClass": reflect.TypeFor[gatewayv1.GatewayClass](),
}

// strictKube decodes o into its API type, refusing unknown fields (a typo,
// or a field of another API version, that kubectl would reject or drop),
// and returns it.
func strictKube(t *testing.T, o *kubeObject) any {
	t.Helper()
	typ, ok := kubeTypes[o.APIVersion+"/"+o.Kind]
	if !ok {
		t.Fatalf("%s: %s %s has no API type in kubeTypes: add it", o.file, o.APIVersion, o.Kind)
	}
	var generic any
	decodeYAML(t, o.file, o.doc, &generic)
	raw, err := json.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	v := reflect.New(typ).Interface()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: %s/%s does not decode strictly into %s: %v", o.file, o.Kind, o.Metadata.Name, typ, err)
	}
	return v
}

// Every object in deploy/kubernetes decodes strictly into its API type,
// and none carries a controller's annotations but the Ingresses' timeouts
// and buffering (ingressControllers), which Ingress has no field for and
// other controllers ignore.
func TestKubeManifestsDecodeStrictly(t *testing.T) {
	t.Parallel()
	objs, _ := kubeObjects(t)
	allowed := map[string]bool{}
	for _, c := range ingressControllers {
		allowed[c.readTimeout], allowed[c.sendTimeout], allowed[c.buffering] = true, true, true
	}
	for key, o := range objs {
		t.Run(key, func(t *testing.T) {
			strictKube(t, o)
			for k := range o.Metadata.Annotations {
				if o.Kind == "Ingress" && allowed[k] {
					continue
				}
				if strings.Contains(k, "nginx") || strings.Contains(k, "traefik") || strings.Contains(k, "alb.ingress") || strings.Contains(k, "haproxy") {
					t.Errorf("%s: annotation %s ties the manifests to one controller", o.file, k)
				}
			}
		})
	}
	if _, ok := objs["HTTPRoute/slackbot"]; !ok {
		t.Error("no HTTPRoute/slackbot: Gateway API is the default public endpoint")
	}
}

// The default public endpoint: the Gateway serves the host over HTTPS with
// a certificate, the HTTPRoute sends the public paths to the Service's port
// (which paths, and their timeouts: TestDeployRoutesEveryPublicEndpoint),
// plain HTTP only redirects, and the host is PUBLIC_URL's and the Slack app
// manifest's.
func TestKubeGatewayRoutes(t *testing.T) {
	t.Parallel()
	objs, kust := kubeObjects(t)
	gw := strictKube(t, objs["Gateway/slackbot"]).(*gatewayv1.Gateway)
	route := strictKube(t, objs["HTTPRoute/slackbot"]).(*gatewayv1.HTTPRoute)
	redirect := strictKube(t, objs["HTTPRoute/slackbot-https-redirect"]).(*gatewayv1.HTTPRoute)
	svc := strictKube(t, objs["Service/slackbot"]).(*corev1.Service)
	dep := strictKube(t, objs["Deployment/slackbot"]).(*appsv1.Deployment)
	ings := kubeIngresses(t, objs)

	// Exactly one way in is applied: the HTTPRoute, not the alternative.
	for _, f := range []string{"gateway.yaml", "httproute.yaml"} {
		if !slices.Contains(kust.Resources, f) {
			t.Errorf("kustomization.yaml does not list %s", f)
		}
	}
	if slices.Contains(kust.Resources, "ingress.yaml") {
		t.Error("kustomization.yaml lists ingress.yaml besides the HTTPRoute: it is the alternative")
	}
	if gw.Spec.GatewayClassName == "" {
		t.Error("Gateway has no gatewayClassName")
	}

	var publicURL string
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "PUBLIC_URL" {
			publicURL = e.Value
		}
	}
	pub, err := url.Parse(publicURL)
	if err != nil || pub.Scheme != "https" {
		t.Fatalf("PUBLIC_URL %q: want an https URL", publicURL)
	}
	host := gatewayv1.Hostname(pub.Host)

	listeners := map[gatewayv1.SectionName]gatewayv1.Listener{}
	for _, l := range gw.Spec.Listeners {
		listeners[l.Name] = l
	}
	https, ok := listeners["https"]
	switch {
	case !ok:
		t.Fatal("Gateway has no https listener")
	case https.Protocol != gatewayv1.HTTPSProtocolType || https.Port != 443:
		t.Errorf("listener https: %s on %d, want HTTPS on 443", https.Protocol, https.Port)
	case https.Hostname == nil || *https.Hostname != host:
		t.Errorf("listener https hostname %v, want PUBLIC_URL's host %s", https.Hostname, host)
	case https.TLS == nil || len(https.TLS.CertificateRefs) == 0:
		t.Error("listener https has no certificate")
	}

	servicePorts := map[int32]bool{}
	for _, p := range svc.Spec.Ports {
		servicePorts[p.Port] = true
	}
	checkParent := func(r *gatewayv1.HTTPRoute, section gatewayv1.SectionName) {
		t.Helper()
		if len(r.Spec.ParentRefs) != 1 || string(r.Spec.ParentRefs[0].Name) != gw.Name ||
			r.Spec.ParentRefs[0].SectionName == nil || *r.Spec.ParentRefs[0].SectionName != section {
			t.Errorf("HTTPRoute %s parentRefs %+v, want Gateway %s listener %s", r.Name, r.Spec.ParentRefs, gw.Name, section)
		}
		if _, ok := listeners[section]; !ok {
			t.Errorf("HTTPRoute %s attaches to listener %s, which the Gateway lacks", r.Name, section)
		}
		if !slices.Equal(r.Spec.Hostnames, []gatewayv1.Hostname{host}) {
			t.Errorf("HTTPRoute %s hostnames %v, want [%s]", r.Name, r.Spec.Hostnames, host)
		}
	}
	checkParent(route, "https")
	checkParent(redirect, "http")

	var paths []string
	for _, rule := range route.Spec.Rules {
		for _, b := range rule.BackendRefs {
			if string(b.Name) != svc.Name || b.Port == nil || !servicePorts[int32(*b.Port)] {
				t.Errorf("HTTPRoute backend %s:%v, want Service %s on one of its ports", b.Name, b.Port, svc.Name)
			}
		}
		for _, m := range rule.Matches {
			if m.Path != nil && m.Path.Value != nil {
				paths = append(paths, fmt.Sprintf("%s %s", *m.Path.Type, *m.Path.Value))
			}
		}
	}
	slices.Sort(paths)
	if want := []string{"Exact /.well-known/jwks.json", "Exact /healthz", "Exact /mcp", "PathPrefix /passkeys", "PathPrefix /slack", "PathPrefix /step-up", "PathPrefix /v1"}; !slices.Equal(paths, want) {
		t.Errorf("HTTPRoute paths %v, want exactly %v (/metrics and /readyz stay in-cluster)", paths, want)
	}
	if len(redirect.Spec.Rules) != 1 || len(redirect.Spec.Rules[0].BackendRefs) != 0 || len(redirect.Spec.Rules[0].Filters) != 1 ||
		redirect.Spec.Rules[0].Filters[0].RequestRedirect == nil || redirect.Spec.Rules[0].Filters[0].RequestRedirect.Scheme == nil ||
		*redirect.Spec.Rules[0].Filters[0].RequestRedirect.Scheme != "https" {
		t.Errorf("HTTPRoute %s: want one rule that only redirects to https", redirect.Name)
	}

	// The alternative Ingresses serve the same host with the same
	// certificate, which one of them asks cert-manager for.
	issuers := 0
	for _, ing := range ings {
		if ing.Spec.IngressClassName != nil {
			t.Errorf("Ingress %s names ingressClassName %q; leave it to the cluster's default, as its comment says", ing.Name, *ing.Spec.IngressClassName)
		}
		for _, r := range ing.Spec.Rules {
			if r.Host != string(host) {
				t.Errorf("Ingress %s host %q, want PUBLIC_URL's host %s", ing.Name, r.Host, host)
			}
		}
		if len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "slackbot-tls" || !slices.Equal(ing.Spec.TLS[0].Hosts, []string{string(host)}) {
			t.Errorf("Ingress %s tls %+v, want host %s with Secret slackbot-tls", ing.Name, ing.Spec.TLS, host)
		}
		for k := range ing.Annotations {
			if strings.HasPrefix(k, "cert-manager.io/") {
				issuers++
			}
		}
	}
	if issuers != 1 {
		t.Errorf("%d Ingresses ask cert-manager for slackbot-tls, want 1: two would fight over one Certificate", issuers)
	}

	// The Slack app manifest points at the host the Gateway serves.
	raw := yamlDocs(t, filepath.Join(deployDir, "slack-app-manifest.yaml"))[0].String()
	var m struct {
		Settings struct {
			EventSubscriptions struct {
				RequestURL string `yaml:"request_url"`
			} `yaml:"event_subscriptions"`
			Interactivity struct {
				RequestURL string `yaml:"request_url"`
			} `yaml:"interactivity"`
		} `yaml:"settings"`
	}
	if err := yaml.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{m.Settings.EventSubscriptions.RequestURL, m.Settings.Interactivity.RequestURL} {
		if got, err := url.Parse(u); err != nil || got.Host != string(host) {
			t.Errorf("Slack manifest request_url %q, want host %s", u, host)
		}
	}
}
