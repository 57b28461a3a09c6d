package engine

import (
	"context"
	"strings"

	"github.com/jukebox-os/jukebox/sandbox"
)

// attach runs BoothOptions.Attach once tx has begun and returns the
// agent's environment with its variables: each one set replaces the
// agent's own, and an empty one removes it. On error tx is rolled back
// and the agent does not run.
func attach(ctx context.Context, b *BoothOptions, tx *sandbox.Tx, env []string) ([]string, error) {
	if b.Attach == nil {
		return env, nil
	}
	set, err := b.Attach(ctx, tx)
	if err != nil {
		tx.Rollback(context.WithoutCancel(ctx))
		return env, err
	}
	return mergeEnv(env, set), nil
}

func mergeEnv(env []string, set map[string]string) []string {
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := set[k]; !over {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		if v != "" {
			out = append(out, k+"="+v)
		}
	}
	return out
}
