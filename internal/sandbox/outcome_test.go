package sandbox

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClassifyInterruptWrappedByADriver: the host's deadline is the verdict
// even when the trap it caused reaches classify wrapped by a driver's error
// (the QuickJS prelude's), and an error nothing interrupted stays an engine
// failure.
func TestClassifyInterruptWrappedByADriver(t *testing.T) {
	wrapped := fmt.Errorf("quickjs: the prelude failed: %w", errors.New("wasm error: unreachable"))

	o, err := classify(context.Background(), wrapped, runState{interrupted: true, fuelLeft: interruptThreshold - 1})
	require.NoError(t, err)
	assert.Equal(t, Outcome{Kind: Timeout, Message: "timeout_ms elapsed"}, o)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = classify(cancelled, wrapped, runState{interrupted: true})
	require.ErrorIs(t, err, context.Canceled, "a cancelled caller gets its error, not a verdict")

	_, err = classify(context.Background(), wrapped, runState{})
	require.ErrorContains(t, err, "engine failure: quickjs: the prelude failed")
}
