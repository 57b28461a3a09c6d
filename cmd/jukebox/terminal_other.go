//go:build !linux && !darwin

package main

import (
	"errors"
	"os"
)

type termState struct{}

func getTermState(*os.File) (*termState, error) { return nil, errors.ErrUnsupported }

func setTermState(*os.File, *termState, bool) {}
