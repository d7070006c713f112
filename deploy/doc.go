// Package deploy holds no code: its test holds the container image recipe
// (../Dockerfile) to what the README and make dist say.
package deploy
