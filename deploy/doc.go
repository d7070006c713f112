// Package deploy holds no code: its test holds the container image recipe
// (../Dockerfile), the Kubernetes manifests (kubernetes/) and the values for
// the official Fluent Bit Helm chart (helm/) to what the README and make
// dist say, and runs the Fluent Bit configuration inside each through the
// check mongolog check does.
package deploy
