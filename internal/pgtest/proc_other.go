//go:build !unix

package pgtest

import (
	"errors"
	"os/exec"
)

type credential struct{}

func serverUser() (string, *credential, error) {
	return "", nil, errors.New("pgtest starts a temporary cluster on Unix only; set " + EnvURL + " to an existing server's URL")
}

func setCredential(*exec.Cmd, *credential) {}

func chownTree(string, *credential) error { return nil }
