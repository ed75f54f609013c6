package mcptools

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestResultValue(t *testing.T) {
	tests := []struct {
		name    string
		res     *mcp.CallToolResult
		want    string // JSON of what the model sees
		wantErr string
	}{
		{
			name: "text",
			res:  &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "one"}, &mcp.TextContent{Text: "two"}}},
			want: `"one\ntwo"`,
		},
		{
			name: "structured content wins over its text rendering",
			res: &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: `{"id":1}`}},
				StructuredContent: map[string]any{"id": 1, "title": "printer"},
			},
			want: `{"id":1,"title":"printer"}`,
		},
		{
			name: "other content described",
			res: &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.ImageContent{MIMEType: "image/png", Data: []byte("abc")},
				&mcp.ResourceLink{URI: "file:///a.txt", Name: "a.txt"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.txt", Text: "inline text"}},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///c.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2}}},
			}},
			want: `"[image image/png, 3 bytes]\n[resource file:///a.txt a.txt]\ninline text\n[resource file:///c.bin application/octet-stream, 2 bytes]"`,
		},
		{
			name: "empty",
			res:  &mcp.CallToolResult{},
			want: `""`,
		},
		{
			name:    "isError",
			res:     &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such repo"}}},
			wantErr: "github.create_issue: no such repo",
		},
		{
			name:    "isError without a message",
			res:     &mcp.CallToolResult{IsError: true},
			wantErr: "github.create_issue: the tool reported an error without a message",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := resultValue("github", "create_issue", tt.res)
			if tt.wantErr != "" {
				var te *ToolError
				if !errors.As(err, &te) || err.Error() != tt.wantErr {
					t.Fatalf("resultValue = %v, %v; want *ToolError %q", v, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resultValue: %v", err)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("marshal %v: %v", v, err)
			}
			if string(got) != tt.want {
				t.Errorf("resultValue = %s, want %s", got, tt.want)
			}
		})
	}
}
