package server

import (
	_ "embed"
	"net/http"
)

// openapiDoc is the OpenAPI 3.1 document of the API.
//
//go:embed openapi.json
var openapiDoc []byte

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	w.Write(openapiDoc)
}
