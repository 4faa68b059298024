package temporaltest

import (
	"testing"

	"github.com/cadre-ai/cadre"
	"github.com/cadre-ai/cadre/enginetest"
)

// TestConformance holds the Temporal engine to the contract every engine
// keeps.
func TestConformance(t *testing.T) {
	enginetest.Run(t, func(t *testing.T, s enginetest.Setup) cadre.Engine {
		e, _ := newEngine(t, setup{Model: s.Model, Definitions: s.Definitions, Limits: s.Limits})
		return e
	})
}
