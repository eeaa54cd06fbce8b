package agent

import (
	"context"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

// SchemaName is the structured output's name in the OpenAI request.
const SchemaName = "gate_configuration"

// MaxOutputTokens bounds every reply, for both providers.
const MaxOutputTokens = 8000

// openAI is the OpenAI Responses API adapter.
type openAI struct {
	svc     responses.ResponseService
	model   string
	timeout time.Duration
}

// newOpenAI builds the adapter with every client setting explicit: the
// response service is constructed without the SDK's environment defaults,
// so OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_ORG_ID, OPENAI_PROJECT_ID and
// OPENAI_CUSTOM_HEADERS cannot change where a conversation goes or what it
// carries.
func newOpenAI(key, baseURL, model string, timeout time.Duration, limit int64) *openAI {
	if !strings.HasSuffix(baseURL, "/") {
		baseURL += "/"
	}
	svc := responses.NewResponseService(
		option.WithBaseURL(baseURL),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
		option.WithHTTPClient(newHTTPClient(timeout+time.Second, limit)),
	)
	return &openAI{svc: svc, model: model, timeout: timeout}
}

func (o *openAI) Name() string  { return "OpenAI" }
func (o *openAI) Model() string { return o.model }

func (o *openAI) params(c Call) responses.ResponseNewParams {
	items := make(responses.ResponseInputParam, 0, len(c.Messages))
	for _, m := range c.Messages {
		role := responses.EasyInputMessageRoleUser
		if m.Role == RoleAssistant {
			role = responses.EasyInputMessageRoleAssistant
		}
		items = append(items, responses.ResponseInputItemParamOfMessage(m.Content, role))
	}
	return responses.ResponseNewParams{
		Model:           o.model,
		Store:           param.NewOpt(false),
		MaxOutputTokens: param.NewOpt(int64(MaxOutputTokens)),
		Instructions:    param.NewOpt(c.Instructions),
		Input:           responses.ResponseNewParamsInputUnion{OfInputItemList: items},
		Text: responses.ResponseTextConfigParam{
			Format: responses.ResponseFormatTextConfigUnionParam{
				OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{
					Name:   SchemaName,
					Strict: param.NewOpt(true),
					Schema: c.Schema,
				},
			},
		},
	}
}

func (o *openAI) Generate(ctx context.Context, c Call) (Reply, error) {
	callCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	callCtx, st := withState(callCtx)
	resp, err := o.svc.New(callCtx, o.params(c))
	if err != nil {
		return Reply{}, failure(o.Name(), callCtx, st)
	}
	if resp.Status != responses.ResponseStatusCompleted {
		return Reply{}, &ProviderError{Provider: o.Name(), Class: ClassUnfinished, Status: 200}
	}
	var text strings.Builder
	for _, item := range resp.Output {
		if item.Type != "message" {
			continue
		}
		for _, part := range item.Content {
			switch part.Type {
			case "refusal":
				return Reply{Refused: true}, nil
			case "output_text":
				text.WriteString(part.Text)
			}
		}
	}
	return Reply{Text: text.String()}, nil
}
