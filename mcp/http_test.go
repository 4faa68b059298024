package mcp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// A response that is one message is read up to the limit and no further;
// an event stream, whose events the SDK bounds, is not cut.
func TestHTTPResponseLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", r.URL.Query().Get("type"))
		if r.URL.Query().Get("status") != "" {
			w.WriteHeader(http.StatusBadRequest)
		}
		io.WriteString(w, strings.Repeat("x", n))
	}))
	defer srv.Close()
	tr := &headerTransport{base: http.DefaultTransport, maxBody: 1000}
	client := &http.Client{Transport: tr}
	tests := []struct {
		query   string
		wantErr bool
	}{
		{query: "n=1000&type=application/json"},
		{query: "n=1001&type=application/json", wantErr: true},
		{query: "n=5000&type=application/json&status=400", wantErr: true},
		{query: "n=5000&type=text/event-stream"},
	}
	for _, tt := range tests {
		resp, err := client.Get(srv.URL + "/?" + tt.query)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tt.wantErr {
			if err == nil || !strings.Contains(err.Error(), "over 1 KB") || !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("%s: read %d bytes, error %v; want one naming the server and the limit", tt.query, len(body), err)
			}
			if len(body) > 1000 {
				t.Errorf("%s: read %d bytes, past the limit", tt.query, len(body))
			}
			continue
		}
		n, _ := strconv.Atoi(strings.TrimPrefix(strings.Split(tt.query, "&")[0], "n="))
		if err != nil || len(body) != n {
			t.Errorf("%s: read %d bytes, error %v; want all %d", tt.query, len(body), err, n)
		}
	}
}
