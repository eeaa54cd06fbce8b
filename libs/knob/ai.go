package knob

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// The AI configuration agent's knobs (runtime spec §7.1), read once at boot.
const (
	// AIProviderOpenAI selects OpenAI's Responses API.
	AIProviderOpenAI = "openai"
	// AIProviderGemini selects Gemini's generateContent.
	AIProviderGemini = "gemini"
	// DefaultOpenAIModel is GATE_AI_MODEL's default for OpenAI.
	DefaultOpenAIModel = "gpt-5.6-luna"
	// DefaultGeminiModel is GATE_AI_MODEL's default for Gemini.
	DefaultGeminiModel = "gemini-3.8-flash"
	// MaxAIModelLength bounds GATE_AI_MODEL.
	MaxAIModelLength = 128
	// DefaultOpenAIBaseURL is GATE_AI_OPENAI_BASE_URL's default.
	DefaultOpenAIBaseURL = "https://api.openai.com/v1/"
	// DefaultGeminiBaseURL is GATE_AI_GEMINI_BASE_URL's default.
	DefaultGeminiBaseURL = "https://generativelanguage.googleapis.com/"
)

var (
	// AIProvider is openai (the default) or gemini, in any letter case.
	AIProvider = Text{Name: "GATE_AI_PROVIDER", Default: AIProviderOpenAI, Normalize: strings.ToLower, Check: checkAIProvider}
	// AIOpenAIBaseURL is where OpenAI conversations go (a compatible
	// gateway, or a fake server in tests).
	AIOpenAIBaseURL = Text{Name: "GATE_AI_OPENAI_BASE_URL", Default: DefaultOpenAIBaseURL, Check: checkAIBaseURL}
	// AIGeminiBaseURL is where Gemini conversations go.
	AIGeminiBaseURL = Text{Name: "GATE_AI_GEMINI_BASE_URL", Default: DefaultGeminiBaseURL, Check: checkAIBaseURL}
	// OpenAIKeys are the OpenAI key variables, first non-empty wins.
	OpenAIKeys = []string{"GATE_OPENAI_API_KEY", "OPENAI_API_KEY"}
	// GeminiKeys are the Gemini key variables, first non-empty wins.
	GeminiKeys = []string{"GATE_GEMINI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"}
)

// AIModelName is the GATE_AI_MODEL variable; its default and check depend
// on the provider (see AIModel).
const AIModelName = "GATE_AI_MODEL"

// AIModel is GATE_AI_MODEL for provider: its default is the provider's, a
// set value is trimmed, at most 128 characters, and for Gemini only
// [A-Za-z0-9._-] (no URL, no "models/" prefix).
func AIModel(provider string) Text {
	def := DefaultOpenAIModel
	if provider == AIProviderGemini {
		def = DefaultGeminiModel
	}
	return Text{Name: AIModelName, Default: def, Check: func(v string) string {
		if len(v) > MaxAIModelLength {
			return fmt.Sprintf("is %d characters long; set a model name of at most %d characters, e.g. %s", len(v), MaxAIModelLength, def)
		}
		if provider == AIProviderGemini {
			for _, r := range v {
				if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
					return fmt.Sprintf("has %q; a Gemini model is a bare name of [A-Za-z0-9._-] (no URL, no models/ prefix), e.g. %s", r, def)
				}
			}
		}
		return ""
	}}
}

// AI is the agent's boot configuration. Key is secret: it is never logged,
// and String omits it.
type AI struct {
	// Provider is AIProviderOpenAI or AIProviderGemini.
	Provider string
	// Model is GATE_AI_MODEL (or the provider's default).
	Model string
	// Key is the first non-empty key variable of the provider; "" turns the
	// agent off.
	Key string
	// KeyVar names the variable Key came from ("" when none).
	KeyVar string
	// BaseURL is the provider's base URL knob.
	BaseURL string
	// WatchAvailable is true when history (PostgreSQL, PG_HOST) is
	// configured: only then may a draft use Watch.
	WatchAvailable bool
}

// Enabled reports whether the agent has a key.
func (a AI) Enabled() bool { return a.Key != "" }

// String describes the configuration without the key.
func (a AI) String() string {
	key := "no key"
	if a.Key != "" {
		key = "key from " + a.KeyVar
	}
	return fmt.Sprintf("provider %s, model %s, %s, base URL %s", a.Provider, a.Model, key, a.BaseURL)
}

// LogValue keeps the key out of structured logs.
func (a AI) LogValue() slog.Value { return slog.StringValue(a.String()) }

// ReadAI reads the agent's knobs through getenv (os.Getenv in main; .env
// files are never read). An unknown provider, a model that fails its check
// or a base URL that is not absolute http(s) is an error naming the knob and
// the fix; a missing key is not an error (the agent is off).
func ReadAI(getenv func(string) string) (AI, error) {
	var a AI
	var errs []error
	p, err := AIProvider.Read(getenv)
	errs = append(errs, err)
	a.Provider = p
	if err != nil {
		a.Provider = AIProviderOpenAI
	}
	a.Model, err = AIModel(a.Provider).Read(getenv)
	errs = append(errs, err)
	keys, base := OpenAIKeys, AIOpenAIBaseURL
	if a.Provider == AIProviderGemini {
		keys, base = GeminiKeys, AIGeminiBaseURL
	}
	for _, k := range keys {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			a.Key, a.KeyVar = v, k
			break
		}
	}
	a.BaseURL, err = base.Read(getenv)
	errs = append(errs, err)
	a.WatchAvailable = strings.TrimSpace(getenv("PG_HOST")) != ""
	return a, errors.Join(errs...)
}

func checkAIProvider(v string) string {
	if v == AIProviderOpenAI || v == AIProviderGemini {
		return ""
	}
	return "is not a provider; set it to openai (the default) or gemini"
}

func checkAIBaseURL(v string) string {
	if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "is not an absolute http(s) URL without credentials; set it to the provider's or a compatible gateway's base URL"
	}
	return ""
}
