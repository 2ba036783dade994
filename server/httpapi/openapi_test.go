package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/store"
)

// openAPI is the part of an OpenAPI 3 document the conformance check reads.
type openAPI struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Responses map[string]oaResponse `json:"responses"`
		Schemas   map[string]oaSchema   `json:"schemas"`
	} `json:"components"`
}

type oaOperation struct {
	Responses map[string]oaResponse `json:"responses"`
}

type oaResponse struct {
	Ref     string `json:"$ref"`
	Content map[string]struct {
		Schema oaSchema `json:"schema"`
	} `json:"content"`
}

type oaSchema struct {
	Ref                  string              `json:"$ref"`
	Type                 string              `json:"type"`
	Required             []string            `json:"required"`
	Properties           map[string]oaSchema `json:"properties"`
	AdditionalProperties *bool               `json:"additionalProperties"`
	Enum                 []any               `json:"enum"`
	Minimum              *float64            `json:"minimum"`
	Maximum              *float64            `json:"maximum"`
	MinLength            *int                `json:"minLength"`
}

func loadOpenAPI(t *testing.T, b []byte) *openAPI {
	t.Helper()
	var doc openAPI
	require.NoError(t, json.Unmarshal(b, &doc))
	require.NotEmpty(t, doc.Paths)
	return &doc
}

// operation finds the documented operation of a concrete request path.
func (d *openAPI) operation(method, path string) (oaOperation, error) {
	tmpl := path
	if strings.HasPrefix(path, keysPrefix) {
		tmpl = keysPrefix + "{key}"
	}
	item, ok := d.Paths[tmpl]
	if !ok {
		return oaOperation{}, fmt.Errorf("path %s (%s) is not documented", path, tmpl)
	}
	raw, ok := item[strings.ToLower(method)]
	if !ok {
		return oaOperation{}, fmt.Errorf("%s %s is not documented", method, tmpl)
	}
	var op oaOperation
	return op, json.Unmarshal(raw, &op)
}

func (d *openAPI) response(r oaResponse) oaResponse {
	if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
		return d.Components.Responses[name]
	}
	return r
}

func (d *openAPI) schema(s oaSchema) oaSchema {
	if name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/"); ok {
		return d.Components.Schemas[name]
	}
	return s
}

// validate checks v (decoded JSON) against s: the keywords the document
// uses (type, required, properties, additionalProperties, enum, minimum,
// maximum, minLength).
func (d *openAPI) validate(s oaSchema, v any, at string) error {
	s = d.schema(s)
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, s.Enum)
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: %T is not an object", at, v)
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				return fmt.Errorf("%s: required %q missing", at, r)
			}
		}
		for k, fv := range m {
			ps, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					return fmt.Errorf("%s: undocumented property %q", at, k)
				}
				continue
			}
			if err := d.validate(ps, fv, at+"."+k); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: %T is not a string", at, v)
		}
		if s.MinLength != nil && len(str) < *s.MinLength {
			return fmt.Errorf("%s: shorter than %d", at, *s.MinLength)
		}
	case "integer":
		f, ok := v.(float64)
		if !ok || f != float64(int64(f)) {
			return fmt.Errorf("%s: %v is not an integer", at, v)
		}
		if s.Minimum != nil && f < *s.Minimum || s.Maximum != nil && f > *s.Maximum {
			return fmt.Errorf("%s: %v out of [%v, %v]", at, v, s.Minimum, s.Maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: %T is not a boolean", at, v)
		}
	}
	return nil
}

// conforms checks one real response against the document: the status is
// documented for the operation, the media type is one it lists, and a JSON
// body matches its schema.
func (d *openAPI) conforms(method, path string, r response) error {
	op, err := d.operation(method, path)
	if err != nil {
		return err
	}
	doc, ok := op.Responses[strconv.Itoa(r.code)]
	if !ok {
		return fmt.Errorf("%s %s answered %d, which is not documented", method, path, r.code)
	}
	doc = d.response(doc)
	if len(doc.Content) == 0 || method == http.MethodHead {
		return nil
	}
	mt, _, err := mime.ParseMediaType(r.header.Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("%s %s %d: content type %q: %v", method, path, r.code, r.header.Get("Content-Type"), err)
	}
	media, ok := doc.Content[mt]
	if !ok {
		return fmt.Errorf("%s %s %d: content type %s is not documented", method, path, r.code, mt)
	}
	if !strings.HasSuffix(mt, "json") {
		return nil
	}
	var v any
	if err := json.Unmarshal(r.body, &v); err != nil {
		return fmt.Errorf("%s %s %d: body is not JSON: %v", method, path, r.code, err)
	}
	if err := d.validate(media.Schema, v, "body"); err != nil {
		return fmt.Errorf("%s %s %d: %w (body %s)", method, path, r.code, err, r.body)
	}
	return nil
}

// TestResponsesConformToOpenAPI drives the running API through every
// documented outcome it can reach on one node and checks each real answer
// against the served /v1/openapi.json: status documented, media type
// documented, JSON body valid against its schema.
func TestResponsesConformToOpenAPI(t *testing.T) {
	f := newFixture(t, withToken("s3cret"), withStore(func(c *store.Config) { c.MaxItemBytes = 1024 }))
	served := f.do("GET", "/v1/openapi.json", nil, "Authorization", "")
	require.Equal(t, http.StatusOK, served.code)
	require.Equal(t, openAPIDocument, served.body)
	doc := loadOpenAPI(t, served.body)
	require.NoError(t, doc.conforms("GET", "/v1/openapi.json", served))

	type req struct {
		method, path, body string
		headers            []string
		want               int
	}
	cases := []req{
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/readyz", "", nil, 200},
		{"GET", "/metrics", "", nil, 200},
		{"GET", "/metrics", "", []string{"Authorization", "Bearer wrong"}, 401},
		{"GET", "/v1/info", "", nil, 200},
		{"GET", "/v1/cluster", "", nil, 404},
		{"POST", "/v1/cluster/rebalance", "", nil, 404},
		{"POST", "/v1/cluster/evict?node=n2", "", nil, 404},
		{"POST", "/v1/node/decommission", "", nil, 404},
		{"PUT", key("k") + "?ttl=30s", "v1", nil, 201},
		{"PUT", key("k") + "?keepttl=true", "v2", nil, 200},
		{"PUT", key("k"), "v3", []string{"If-Match", `"9"`}, 412},
		{"PUT", key("k"), "v3", []string{"If-None-Match", "*"}, 412},
		{"PUT", key("k") + "?tl=5s", "v", nil, 400},
		{"PUT", key("big"), strings.Repeat("x", 2048), nil, 413},
		{"PUT", key(strings.Repeat("k", 70_000)), "v", nil, 414},
		{"GET", key("k"), "", nil, 200},
		{"GET", key("k"), "", []string{"If-None-Match", `"2"`}, 304},
		{"HEAD", key("k"), "", nil, 200},
		{"GET", key("absent"), "", nil, 404},
		{"GET", key("k"), "", []string{"Authorization", ""}, 401},
		{"PATCH", key("k"), "v", nil, 405},
		{"DELETE", key("k"), "", nil, 204},
		{"DELETE", key("k"), "", nil, 404},
		{"DELETE", key("k"), "", []string{"If-Match", `"1"`}, 400},
	}
	for _, c := range cases {
		var r response
		if c.body != "" {
			r = f.do(c.method, c.path, bytes.NewReader([]byte(c.body)), c.headers...)
		} else {
			r = f.do(c.method, c.path, nil, c.headers...)
		}
		name := c.method + " " + c.path
		if len(name) > 80 {
			name = name[:80] + "…"
		}
		require.Equal(t, c.want, r.code, "%s: %s", name, r.body)
		path, _, _ := strings.Cut(c.path, "?")
		if r.code == http.StatusMethodNotAllowed {
			// An undeclared method has no operation to document it: its
			// answer is the same problem document as every error.
			require.Equal(t, MIMEProblem, r.header.Get("Content-Type"))
			var v any
			require.NoError(t, json.Unmarshal(r.body, &v))
			require.NoError(t, doc.validate(oaSchema{Ref: "#/components/schemas/Problem"}, v, "body"), name)
			continue
		}
		require.NoError(t, doc.conforms(c.method, path, r), name)
	}
}

// The checker itself refuses what the document does not allow.
func TestOpenAPICheckerRejects(t *testing.T) {
	doc := loadOpenAPI(t, openAPIDocument)
	problem := oaSchema{Ref: "#/components/schemas/Problem"}
	var v any
	require.NoError(t, json.Unmarshal([]byte(`{"type":"about:blank","title":"Bad Request","status":400}`), &v))
	require.ErrorContains(t, doc.validate(problem, v, "body"), `required "code" missing`)
	require.NoError(t, json.Unmarshal([]byte(`{"type":"about:blank","title":"x","status":400,"code":"Nope"}`), &v))
	require.ErrorContains(t, doc.validate(problem, v, "body"), "is not one of")
	require.NoError(t, json.Unmarshal([]byte(`{"type":"about:blank","title":"x","status":400,"code":"BadRequest","error":"old"}`), &v))
	require.ErrorContains(t, doc.validate(problem, v, "body"), `undocumented property "error"`)
	r := response{code: 418, header: http.Header{}}
	require.ErrorContains(t, doc.conforms("GET", key("k"), r), "not documented")
	r = response{code: 404, header: http.Header{"Content-Type": {"application/json"}}, body: []byte(`{}`)}
	require.ErrorContains(t, doc.conforms("GET", key("k"), r), "content type application/json is not documented")
}
