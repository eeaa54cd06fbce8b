package agent

import (
	"strings"
	"testing"

	"github.com/queen-mq/gate/libs/knob"
)

// TestSDKEnvironmentIgnored: the variables the SDKs read on their own
// cannot change where a conversation goes, which key it carries or which
// backend answers. Not parallel: t.Setenv.
func TestSDKEnvironmentIgnored(t *testing.T) {
	elsewhere := trap(t)
	for k, v := range map[string]string{
		"OPENAI_BASE_URL":             elsewhere + "/v1",
		"OPENAI_API_KEY":              "sk-from-environment",
		"OPENAI_ORG_ID":               "org-from-environment",
		"OPENAI_PROJECT_ID":           "proj-from-environment",
		"OPENAI_CUSTOM_HEADERS":       "X-Leak: yes",
		"GOOGLE_GENAI_USE_VERTEXAI":   "true",
		"GOOGLE_GENAI_USE_ENTERPRISE": "true",
		"GOOGLE_API_KEY":              "google-from-environment",
		"GEMINI_API_KEY":              "gemini-from-environment",
		"GOOGLE_GEMINI_BASE_URL":      elsewhere,
		"GOOGLE_VERTEX_BASE_URL":      elsewhere,
		"GOOGLE_CLOUD_PROJECT":        "project-from-environment",
		"GOOGLE_CLOUD_LOCATION":       "us-central1",
	} {
		t.Setenv(k, v)
	}
	for _, p := range providers {
		t.Run(p, func(t *testing.T) {
			c := oneRequest(t, p, ask("hi"), nil)
			for name, vals := range c.Header {
				for _, v := range vals {
					if strings.Contains(v, "environment") || strings.EqualFold(name, "X-Leak") {
						t.Errorf("header %s: %s came from the SDK's environment", name, v)
					}
				}
			}
			if strings.Contains(c.Path, "projects/") || strings.Contains(c.Path, "v1beta1") {
				t.Errorf("path %s is a Vertex path", c.Path)
			}
			key := c.Header.Get("Authorization")
			if p == knob.AIProviderGemini {
				key = c.Header.Get("X-Goog-Api-Key")
			}
			if !strings.Contains(key, testKey) {
				t.Errorf("the configured key was not sent (got %q)", key)
			}
		})
	}
}

// TestReadAIKeys is §7.1's key precedence and boot refusals through
// knob.ReadAI.
func TestReadAIKeys(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name          string
		env           map[string]string
		provider, key string
		model, err    string
	}{
		{"defaults, no key", nil, "openai", "", "gpt-5.6-luna", ""},
		{"openai precedence", map[string]string{"GATE_OPENAI_API_KEY": " k-first ", "OPENAI_API_KEY": "k-second"}, "openai", "k-first", "gpt-5.6-luna", ""},
		{"openai fallback", map[string]string{"GATE_OPENAI_API_KEY": "  ", "OPENAI_API_KEY": "k-second"}, "openai", "k-second", "gpt-5.6-luna", ""},
		{"no cross-provider fallback", map[string]string{"GATE_AI_PROVIDER": "gemini", "OPENAI_API_KEY": "k-second"}, "gemini", "", "gemini-3.8-flash", ""},
		{"gemini precedence", map[string]string{"GATE_AI_PROVIDER": " Gemini ", "GEMINI_API_KEY": "k-gem", "GOOGLE_API_KEY": "k-google", "GATE_GEMINI_API_KEY": "k-gate"}, "gemini", "k-gate", "gemini-3.8-flash", ""},
		{"gemini second", map[string]string{"GATE_AI_PROVIDER": "gemini", "GEMINI_API_KEY": "k-gem", "GOOGLE_API_KEY": "k-google"}, "gemini", "k-gem", "gemini-3.8-flash", ""},
		{"gemini third", map[string]string{"GATE_AI_PROVIDER": "gemini", "GOOGLE_API_KEY": "k-google"}, "gemini", "k-google", "gemini-3.8-flash", ""},
		{"gemini 3.6", map[string]string{"GATE_AI_PROVIDER": "gemini", "GATE_AI_MODEL": "gemini-3.6-flash"}, "gemini", "", "gemini-3.6-flash", ""},
		{"unknown provider", map[string]string{"GATE_AI_PROVIDER": "claude"}, "", "", "", "GATE_AI_PROVIDER"},
		{"model too long", map[string]string{"GATE_AI_MODEL": strings.Repeat("m", 129)}, "", "", "", "GATE_AI_MODEL"},
		{"gemini model as URL", map[string]string{"GATE_AI_PROVIDER": "gemini", "GATE_AI_MODEL": "models/gemini-3.8-flash"}, "", "", "", "GATE_AI_MODEL"},
		{"openai model with a slash is fine", map[string]string{"GATE_AI_MODEL": "org/model-1"}, "openai", "", "org/model-1", ""},
		{"base URL not http", map[string]string{"GATE_AI_OPENAI_BASE_URL": "ftp://x"}, "", "", "", "GATE_AI_OPENAI_BASE_URL"},
		{"base URL with credentials", map[string]string{"GATE_AI_PROVIDER": "gemini", "GATE_AI_GEMINI_BASE_URL": "https://u:p@x"}, "", "", "", "GATE_AI_GEMINI_BASE_URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ai, err := knob.ReadAI(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ai.Provider != c.provider || ai.Key != strings.TrimSpace(c.key) || ai.Model != c.model {
				t.Fatalf("%+v", ai)
			}
			if c.key != "" && strings.Contains(ai.String(), c.key) {
				t.Errorf("String() shows the key: %s", ai)
			}
		})
	}
}
