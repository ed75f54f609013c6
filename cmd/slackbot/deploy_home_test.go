package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/slack-go/slack"
)

// TestManifestEnablesAppHome: the code publishes Home tabs
// (views.publish) when people open them, so the manifest enables the Home
// tab (Slack answers not_enabled otherwise) and subscribes to
// app_home_opened, and keeps the Messages tab that direct messages start
// runs in.
func TestManifestEnablesAppHome(t *testing.T) {
	t.Parallel()
	called := calledSlackMethods(t, "../..")
	if _, ok := called["PublishView"]; !ok {
		t.Fatal("the scan of the code found no views.publish: App Home is not published, or the scan misses it")
	}
	file := filepath.Join(deployDir, "slack-app-manifest.yaml")
	var m slack.Manifest
	decodeYAML(t, file, yamlDocs(t, file)[0], &m, yaml.DisallowUnknownField())
	if !m.Features.AppHome.HomeTabEnabled {
		t.Error("features.app_home.home_tab_enabled is not true: views.publish answers not_enabled")
	}
	if !m.Features.AppHome.MessagesTabEnabled {
		t.Error("features.app_home.messages_tab_enabled is not true: direct messages to the bot start runs")
	}
	if m.Settings.EventSubscriptions == nil || !slices.Contains(m.Settings.EventSubscriptions.BotEvents, "app_home_opened") {
		t.Error("the manifest does not subscribe to app_home_opened: nobody's Home would be published")
	}
}
