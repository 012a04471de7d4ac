//go:build !unix

package httpguard

func fdLimit() int { return 0 }
