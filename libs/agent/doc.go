// Package agent is Gate's AI configuration agent: it turns an operator's
// conversation into a draft graph document, validated by Gate's own
// compiler (libs/declare), through one of two providers (OpenAI's Responses
// API or Gemini's generateContent, each behind Provider and built on the
// official SDK). It never saves, provisions or changes a graph; the
// operator creates a draft through the normal declare route.
//
// The relay never links this package (gate-relay's import-graph test).
package agent
