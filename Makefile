# Sandbar operator.

# Tool and control-plane versions, pinned.
CONTROLLER_TOOLS_VERSION ?= v0.23.0
HELM_VERSION ?= v3.22.0
HELM4_VERSION ?= v4.3.2
GOLANGCI_LINT_VERSION ?= v2.15.0
ACTIONLINT_VERSION ?= v1.7.12
KUBERNETES_VERSION ?= v1.37.2
# OLDEST_KUBERNETES_VERSION: the oldest Kubernetes `make test-matrix` runs the envtest
# suites on (docs/install.md, "Supported versions", says why not 1.29).
OLDEST_KUBERNETES_VERSION ?= v1.30.14
ETCD_VERSION ?= v3.6.4
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
# CHROMIUM_VERSION: Debian's Chromium package, for the consent page's browser test.
CHROMIUM_VERSION ?= 148.0.7778.167-1~deb12u1

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# ACTIONLINT checks the GitHub Actions workflows (.github/workflows), and the shell of
# their run steps when shellcheck is on the PATH.
ACTIONLINT ?= $(LOCALBIN)/actionlint-$(ACTIONLINT_VERSION)
# CYCLONEDX_GOMOD writes the image's SBOM (CycloneDX): the modules linked into the manager.
CYCLONEDX_GOMOD ?= $(LOCALBIN)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VERSION)
# HELM4: the chart is tested with Helm 4 as well as Helm 3.
HELM4 ?= $(LOCALBIN)/helm-$(HELM4_VERSION)
# KUBEBUILDER_ASSETS: kube-apiserver, etcd and kubectl for envtest and `make dev`.
ENVTEST_ASSETS ?= $(LOCALBIN)/k8s/$(KUBERNETES_VERSION)
# NODE_ASSETS: what a one-node cluster adds (make cluster, make test-cluster): kubelet,
# kube-proxy, kube-controller-manager, kube-scheduler, containerd, runc, the CNI plugins
# and the sandbox image's pause binary.
NODE_ASSETS ?= $(LOCALBIN)/node/$(KUBERNETES_VERSION)
# CHROMIUM: Chromium with the libraries it needs (hack/chromium.sh), for chromedp.
CHROMIUM ?= $(LOCALBIN)/chromium-$(firstword $(subst -, ,$(CHROMIUM_VERSION)))/chromium
# TS_CLIENT: the TypeScript MCP SDK client of internal/mcpserver/typescript_test.go.
TS_CLIENT ?= hack/ts-client
# INSPECTOR: MCP Inspector (npm), whose CLI checks the tools' MCP Apps views.
INSPECTOR ?= hack/inspector
# CONFORMANCE: the official MCP conformance suite and the Node.js 22 it needs.
CONFORMANCE ?= hack/conformance

GO_TEST_FLAGS ?= -count=1 -race -timeout 20m
# SUITE_PACKAGES need more than Go to test: a control plane (controllers, the MCP
# server, durability, e2e), Helm and npm packages (e2e), controller-gen (api).
# test-unit runs every other package.
SUITE_PACKAGES = api/v1alpha1 controllers/envtest internal/mcpserver internal/durability internal/e2e $(CLUSTER_PACKAGES)
# CLUSTER_PACKAGES need a one-node cluster (root, the node's binaries, the image):
# test-cluster runs them.
CLUSTER_PACKAGES = internal/onnode
# REPEAT_PACKAGES run twice in one process (-count=2), in `make test` and `make
# test-repeat`: the MCP packages tested over the fake cluster (every verb, the Tasks
# adapter, prompts, processes, resources, the fuzz seeds) and the controllers with their
# control-plane suite. A test that leans on what an earlier run left fails there.
REPEAT_PACKAGES = controllers controllers/envtest internal/mcpserver/verbs internal/mcpserver/fuzz \
	internal/mcpserver/sdkgap/tasks internal/mcpserver/prompts internal/mcpserver/process internal/mcpserver/resources
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMG ?= ghcr.io/sandbar-dev/sandbar:$(VERSION)
# The manager as the tests, `make dev` and the image build it (the Dockerfile too): no
# paths, build ID or VCS stamp in the binary, so one commit and one Go gives one binary.
GO_BUILD_FLAGS = -trimpath -buildvcs=false -ldflags "-s -w -buildid= -X main.version=$(VERSION)"
# The image's labels and timestamps: the commit, and its time (SOURCE_DATE_EPOCH).
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
# IMAGE_PLATFORMS: the platforms of `make image`'s index; its tarball is of the host's.
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_DIR ?= $(LOCALBIN)/image
export KUBERNETES_VERSION ETCD_VERSION

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs (config/crd/bases) and RBAC (config/rbac) from markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd:allowDangerousTypes=true paths="./..." \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	rm -f charts/sandbar/crds/*.yaml && cp config/crd/bases/*.yaml charts/sandbar/crds/
	cp config/rbac/role.yaml charts/sandbar/files/manager-role.yaml

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

# MCP_SHARDS: the MCP server's control-plane suite (internal/mcpserver), the longest,
# runs as this many processes side by side, each with a control plane of its own and a
# share of the tests (hack/test-shard.sh deals them out): one process keeps about one
# core busy.
MCP_SHARDS ?= 2
TEST_ENV = CONTROLLER_GEN="$(CONTROLLER_GEN)" HELM="$(HELM)" HELM4="$(HELM4)" KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" CHROMIUM="$(CHROMIUM)"
# RUN_FLAGS: what the test targets add to go test (none when run alone). make test, once
# lint has run, sets TEST_RUN_FLAGS: golangci-lint's govet runs every analyzer go test's
# own vet does (-vet=off: not again, a package at a time; on an empty cache that vet
# costs two minutes of CPU), and test binaries are linked without DWARF (-ldflags=-w: a
# quarter less linking; failures and race reports keep their files and lines).
RUN_FLAGS ?=
TEST_RUN_FLAGS = -vet=off -ldflags=-w

.PHONY: test
test: ## Run every test (with the race detector): lint, unit, envtest, MCP clients (Go, TypeScript), end-to-end with Helm 3 and 4, conformance; then REPEAT_PACKAGES twice beside the chart on a one-node cluster.
	@# Two at a time: while one builds, the other downloads or links.
	$(MAKE) --no-print-directory -j 2 --output-sync=target lint controller-gen helm helm4 envtest-assets node-assets ts-client inspector conformance chromium
	$(MAKE) --no-print-directory test-compile
	$(MAKE) --no-print-directory -j $$(( $(MCP_SHARDS) + 1 )) --output-sync=target test-packages $(addprefix test-mcp-shard-,$(shell seq $(MCP_SHARDS))) \
		RUN_FLAGS="$(TEST_RUN_FLAGS)"
	@# After the rest, not beside it: on two cores the runs would slow each other, and
	@# the control-plane suites' waits are sized for a few runs at a time. The chart on
	@# a node mostly waits for its pods (two thirds of two cores idle): beside the repeats.
	$(MAKE) --no-print-directory -j 2 --output-sync=target test-repeat test-cluster RUN_FLAGS="$(TEST_RUN_FLAGS)"

# test-compile compiles every package and its tests with the race detector, and the
# manager and the kubectl plugin as the suites build them (CGO_ENABLED=0, -trimpath),
# once, so that the runs side by side that follow find them in the build cache. On an
# empty cache each would otherwise compile the same packages at the same time, and the
# suites' waits would run out while the compilers held both cores.
.PHONY: test-compile
test-compile:
	go list -race -test -export -deps ./... > /dev/null
	CGO_ENABLED=0 go list -trimpath -export -deps ./cmd ./cmd/kubectl-sandbar > /dev/null

# test-packages runs every package but the MCP server's suite (the shards run it),
# REPEAT_PACKAGES (test-repeat runs them) and CLUSTER_PACKAGES (test-cluster).
.PHONY: test-packages
test-packages:
	$(TEST_ENV) go test $(GO_TEST_FLAGS) $(RUN_FLAGS) $$(go list ./... | grep -v -x -E "$$(go list -m)/(internal/mcpserver|$(shell echo $(REPEAT_PACKAGES) $(CLUSTER_PACKAGES) | tr ' ' '|'))")

# HOST_PLATFORM: the platform of the image a one-node cluster here runs.
HOST_PLATFORM = linux/$(shell go env GOARCH)

.PHONY: test-cluster
test-cluster: helm helm4 envtest-assets node-assets ## Install the chart as a user does on a one-node cluster (root; in make test): Helm 4 and Helm 3, the image in pods, the Service, leader failover, a rolling upgrade under calls, drain and the PDB, uninstall and reinstall.
	$(MAKE) --no-print-directory image-layout IMAGE_PLATFORMS=$(HOST_PLATFORM)
	$(TEST_ENV) NODE_ASSETS="$(NODE_ASSETS)" SANDBAR_IMAGE="$(IMAGE_DIR)/sandbar-$(subst /,-,$(HOST_PLATFORM)).tar" \
		go test $(GO_TEST_FLAGS) $(RUN_FLAGS) -v $(addprefix ./,$(CLUSTER_PACKAGES))

.PHONY: bench-cluster
bench-cluster: helm helm4 envtest-assets node-assets ## The capacity model's check (not in make test; root): the chart on a one-node cluster at one replica and at two, 50 clients of each kind of read; what a call costs the managers and the API server (docs/performance.md, "Capacity").
	$(MAKE) --no-print-directory image-layout IMAGE_PLATFORMS=$(HOST_PLATFORM)
	$(TEST_ENV) NODE_ASSETS="$(NODE_ASSETS)" SANDBAR_IMAGE="$(IMAGE_DIR)/sandbar-$(subst /,-,$(HOST_PLATFORM)).tar" \
		go test -run '^$$' -bench CapacityOnANode -benchtime 1x -timeout 30m ./internal/onnode/ | tee $(LOCALBIN)/bench-cluster.txt

.PHONY: test-mcp
test-mcp: envtest-assets ts-client inspector chromium ## Run the MCP server's control-plane suite (internal/mcpserver) as MCP_SHARDS (2) processes side by side.
	$(MAKE) --no-print-directory -j $(MCP_SHARDS) --output-sync=target $(addprefix test-mcp-shard-,$(shell seq $(MCP_SHARDS)))

test-mcp-shard-%:
	$(TEST_ENV) go test $(GO_TEST_FLAGS) $(RUN_FLAGS) -run "$$(hack/test-shard.sh internal/mcpserver $* $(MCP_SHARDS))" ./internal/mcpserver/

.PHONY: test-repeat-mcp
test-repeat-mcp: envtest-assets ts-client inspector chromium ## Run the MCP server's control-plane suite twice in each shard's process (-count=2; about 16 minutes, not in make test, which runs it once).
	$(MAKE) --no-print-directory -j $(MCP_SHARDS) --output-sync=target $(addprefix test-mcp-shard-,$(shell seq $(MCP_SHARDS))) GO_TEST_FLAGS="-count=2 -race -timeout 40m"

# UNIT_PACKAGES are the packages whose tests need only Go.
UNIT_PACKAGES = $$(go list ./... | grep -v -x -E "$$(go list -m)/($(shell echo $(SUITE_PACKAGES) | tr ' ' '|'))")

.PHONY: test-unit
test-unit: ## Run the tests that need only Go (no control plane, Helm or npm), with the race detector: every verb through a real MCP client over a fake cluster, the fuzz seeds, the pure packages.
	go test -count=1 -race $(UNIT_PACKAGES)

.PHONY: test-repeat
test-repeat: envtest-assets ## Run the MCP and controllers tests twice in one process (-count=2, with the race detector): a test that leans on what an earlier run left behind fails.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -count=2 -race $(RUN_FLAGS) $(addprefix ./,$(REPEAT_PACKAGES))

# DOCS_TESTS: the generated references (docs/flags.md, docs/reference/*.md) and the check
# of every command and flag the docs show (cmd/docs_*_test.go).
DOCS_TESTS = TestFlagsReference|TestMetamodelReference|TestToolsReference|TestChartValuesReference|TestDocs

.PHONY: docs-check
docs-check: ## Check the docs without a cluster: the generated references match their sources (go test ./cmd -run <Test> -update rewrites one), and every command in README.md and docs/ names real make targets, packages and tests, flags, chart values, resources and paths.
	go test -count=1 -run '^($(DOCS_TESTS))' ./cmd

# golangci-lint checks the race build (-race): the packages it compiles are those make
# test's runs use, so an empty build cache compiles them once, not twice. They are
# compiled before it runs, so that its timeout (.golangci.yml) is for its analysis, not
# for the compiler on a busy machine. Its govet runs go vet's analyzers (all but
# loopclosure, which Go 1.22's loops made moot), so go vet does not run again.
.PHONY: lint
lint: golangci-lint actionlint ## gofmt, golangci-lint (.golangci.yml, go vet's analyzers among them), actionlint on the workflows, and a check that go mod tidy changes nothing.
	@test -z "$$(gofmt -l api cmd controllers internal hack)" || { echo "gofmt needed:"; gofmt -l api cmd controllers internal hack; exit 1; }
	go list -race -test -export -deps ./... > /dev/null
	GOFLAGS="$(strip $(GOFLAGS) -race)" $(GOLANGCI_LINT) run ./...
	$(ACTIONLINT) .github/workflows/*.yml
	@go mod tidy -diff || { echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1; }

# MATRIX_PACKAGES are the suites test-matrix runs on each Kubernetes version: those that
# need a control plane but not Helm's chart (whose admission policies need 1.30).
MATRIX_PACKAGES = ./api/v1alpha1 ./controllers/envtest ./internal/instanceapi ./internal/durability ./internal/mcpserver

.PHONY: test-matrix
test-matrix: controller-gen ts-client ## Run the envtest suites (MATRIX_PACKAGES) on the oldest Kubernetes tested (OLDEST_KUBERNETES_VERSION) and on the newest (KUBERNETES_VERSION), one version after the other.
	@set -e; for v in $(OLDEST_KUBERNETES_VERSION) $(KUBERNETES_VERSION); do \
		echo ">> Kubernetes $$v"; \
		KUBERNETES_VERSION=$$v hack/control-plane-binaries.sh $(LOCALBIN)/k8s/$$v; \
		CONTROLLER_GEN="$(CONTROLLER_GEN)" KUBEBUILDER_ASSETS="$(LOCALBIN)/k8s/$$v" go test -count=1 -race -timeout 40m $(MATRIX_PACKAGES); \
	done

.PHONY: test-e2e
test-e2e: helm helm4 envtest-assets ts-client conformance ## Run the end-to-end test alone: Helm 3 and 4 install on a local control plane, the manager with the chart's RBAC, a TypeScript MCP client.
	HELM="$(HELM)" HELM4="$(HELM4)" KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test $(GO_TEST_FLAGS) -v ./internal/e2e/

BENCH ?= .
.PHONY: bench
bench: envtest-assets ## Run the benchmarks (BENCH, a regexp, picks some), one package at a time; each is printed with its ratio to the baseline measured in the same run.
	KUBEBUILDER_ASSETS="$(ENVTEST_ASSETS)" go test -p 1 -timeout 90m -run '^$$' -bench '$(BENCH)' -benchmem ./internal/... | tee $(LOCALBIN)/bench.txt
	@hack/bench-ratios.sh $(LOCALBIN)/bench.txt

# SOAK_*: the knobs of `make soak` (docs/reliability.md, "Load and soak"); SOAK_FLAGS
# passes more (go run ./hack/soak --help lists them).
SOAK_SESSIONS ?= 100
SOAK_DURATION ?= 10m
SOAK_ABANDONED ?= 1000
SOAK_SESSION_TIMEOUT ?= 1m
SOAK_FLAGS ?=

.PHONY: soak
soak: build envtest-assets ## Load and soak benchmark (not in make test): SOAK_SESSIONS (100) MCP sessions of mixed work for SOAK_DURATION (10m) against the manager on a local control plane, then SOAK_ABANDONED (1000) abandoned sessions; a report, and exit 1 on a failed check.
	go build -o $(LOCALBIN)/sandbar-soak ./hack/soak
	$(LOCALBIN)/sandbar-soak --assets "$(ENVTEST_ASSETS)" --manager "$(LOCALBIN)/manager" --sessions $(SOAK_SESSIONS) \
		--duration $(SOAK_DURATION) --abandoned $(SOAK_ABANDONED) --session-timeout $(SOAK_SESSION_TIMEOUT) $(SOAK_FLAGS)

# CHAOS_*: the knobs of `make chaos` (docs/reliability.md, "Chaos"); CHAOS_FLAGS passes
# more (go run ./hack/chaos --help lists them).
CHAOS_DURATION ?= 10m
CHAOS_WORKERS ?= 24
CHAOS_FLAGS ?=

.PHONY: chaos
chaos: build envtest-assets ## Chaos run (not in make test): for CHAOS_DURATION (10m), clients of both revisions make valid and hostile calls against two manager replicas while the API server is paused and resumed and the leader is killed; a report, and exit 1 on a failed check.
	go build -o $(LOCALBIN)/sandbar-chaos ./hack/chaos
	$(LOCALBIN)/sandbar-chaos --assets "$(ENVTEST_ASSETS)" --manager "$(LOCALBIN)/manager" --duration $(CHAOS_DURATION) \
		--workers $(CHAOS_WORKERS) $(CHAOS_FLAGS)

# FUZZ_TARGETS are package:target pairs; `make fuzz` runs each for FUZZTIME with
# FUZZ_PARALLEL workers (-parallel), one after another (-fuzz takes one target of
# one package at a time).
FUZZ_TARGETS = \
	./internal/mcpserver/fuzz:FuzzJSONRPC \
	./internal/mcpserver/fuzz:FuzzToolArguments \
	./internal/mcpserver/fuzz:FuzzResourceURI \
	./internal/mcpserver/fuzz:FuzzSealedPositions \
	./internal/mcpserver/resources:FuzzParseURI \
	./internal/codec:FuzzDecodeMarkdown \
	./internal/codec:FuzzDecodeJSON \
	./internal/catalog:FuzzCoerce \
	./internal/instanceapi:FuzzClassSpec \
	./internal/instanceapi:FuzzPropertySpec
FUZZTIME ?= 10m
FUZZ_PARALLEL ?= 1

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (10m) each and print its execs; a crasher lands in the package's testdata/fuzz, whose corpora every `go test` runs.
	@logs=$$(mktemp -d); failed=""; \
	for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME), -parallel $(FUZZ_PARALLEL))"; \
		if ! go test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -parallel $(FUZZ_PARALLEL) $$pkg > $$logs/$$name.txt 2>&1; then \
			failed="$$failed $$name"; tail -30 $$logs/$$name.txt; \
		fi; \
		grep 'fuzz: elapsed' $$logs/$$name.txt | tail -1; \
	done; \
	echo "logs: $$logs"; \
	if [ -n "$$failed" ]; then echo "failed:$$failed"; exit 1; fi

.PHONY: dev
dev: build kubectl-sandbar envtest-assets ## Start a local control plane, install CRDs, admission policies and samples, run the manager in the foreground; bin/kubectl-sandbar decides held calls.
	go build -o $(LOCALBIN)/sandbar-dev ./hack/dev
	$(LOCALBIN)/sandbar-dev --assets "$(ENVTEST_ASSETS)" --manager "$(LOCALBIN)/manager"

.PHONY: cluster
cluster: envtest-assets node-assets ## Start a one-node cluster (root): the control plane, a kubelet with containerd, CNI and kube-proxy, the manager image loaded; in the foreground, Ctrl-C stops it.
	$(MAKE) --no-print-directory image-layout IMAGE_PLATFORMS=$(HOST_PLATFORM)
	go build -o $(LOCALBIN)/sandbar-cluster ./hack/cluster
	$(LOCALBIN)/sandbar-cluster --dir $(LOCALBIN)/cluster --control-plane "$(ENVTEST_ASSETS)" --node "$(NODE_ASSETS)" \
		--pause "$(NODE_ASSETS)/pause" --image "$(IMAGE_DIR)/sandbar-$(subst /,-,$(HOST_PLATFORM)).tar"

##@ Build

.PHONY: build
build: ## Build the manager binary into bin/manager.
	CGO_ENABLED=0 go build $(GO_BUILD_FLAGS) -o $(LOCALBIN)/manager ./cmd

.PHONY: kubectl-sandbar
kubectl-sandbar: ## Build the kubectl plugin (kubectl sandbar approve|deny NAME) into bin/kubectl-sandbar; put bin/ on the PATH to use it.
	CGO_ENABLED=0 go build $(GO_BUILD_FLAGS) -o $(LOCALBIN)/kubectl-sandbar ./cmd/kubectl-sandbar

.PHONY: image
image: cyclonedx-gomod image-layout ## Build the manager image $(IMG) without a container engine or registry, reproducibly, into bin/image: oci/ (an OCI layout of IMAGE_PLATFORMS), sandbar-linux-<arch>.tar (the host's platform, for podman load, ctr images import, kind load image-archive) and sbom.cdx.json.
	@# The SBOM of the binary the image holds (its first platform's; the others link the
	@# same modules): every module linked into it, with the go.sum hashes Go recorded.
	$(CYCLONEDX_GOMOD) bin -json -noserial -notimestamp -version $(VERSION) -output $(IMAGE_DIR)/sbom.cdx.json \
		$(IMAGE_DIR)/manager-$(subst /,-,$(firstword $(IMAGE_PLATFORMS)))
	@echo "wrote $(IMAGE_DIR)/sbom.cdx.json"

# image-layout is make image without the SBOM: what make test-cluster and make cluster load.
.PHONY: image-layout
image-layout:
	@rm -rf $(IMAGE_DIR) && mkdir -p $(IMAGE_DIR)
	for p in $(IMAGE_PLATFORMS); do \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build $(GO_BUILD_FLAGS) -o $(IMAGE_DIR)/manager-$${p%/*}-$${p#*/} ./cmd; \
	done
	go run ./hack/image -out $(IMAGE_DIR) -tag $(IMG) -version $(VERSION) -revision "$(REVISION)" -epoch $(SOURCE_DATE_EPOCH) \
		$(foreach p,$(IMAGE_PLATFORMS),-binary $(p)=$(IMAGE_DIR)/manager-$(subst /,-,$(p))) -archive-platform linux/$$(go env GOARCH)

.PHONY: docker-build
docker-build: ## Build the manager image $(IMG) with a Docker engine from the Dockerfile (the content of `make image`).
	docker build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --build-arg SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) -t $(IMG) .

.PHONY: build-installer
build-installer: envtest-assets ## Write dist/install.yaml: CRDs, RBAC and the manager, as config/default, with image $(IMG), the ClusterRoles of config/tenancy and the admission policies of config/admission.
	@mkdir -p dist
	$(ENVTEST_ASSETS)/kubectl kustomize config/default | sed 's|ghcr.io/sandbar-dev/sandbar:latest|$(IMG)|' > dist/install.yaml
	echo "---" >> dist/install.yaml
	$(ENVTEST_ASSETS)/kubectl kustomize config/tenancy >> dist/install.yaml
	echo "---" >> dist/install.yaml
	$(ENVTEST_ASSETS)/kubectl kustomize config/admission >> dist/install.yaml
	@echo "wrote dist/install.yaml"

.PHONY: run
run: ## Run the manager against the current kubeconfig.
	go run ./cmd

##@ Deployment

.PHONY: install
install: ## Install the CRDs into the cluster of the current kubeconfig.
	kubectl apply --server-side -f config/crd/bases

.PHONY: uninstall
uninstall: ## Remove the CRDs (and so every metamodel object) from the current cluster.
	kubectl delete --ignore-not-found -f config/crd/bases

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into bin/.
$(CONTROLLER_GEN):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN)/.tmp go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)
	mv $(LOCALBIN)/.tmp/controller-gen $(CONTROLLER_GEN) && rm -rf $(LOCALBIN)/.tmp

.PHONY: cyclonedx-gomod
cyclonedx-gomod: $(CYCLONEDX_GOMOD) ## Install cyclonedx-gomod (the SBOM of make image) into bin/.
$(CYCLONEDX_GOMOD):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN)/.tmp-cdx go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)
	mv $(LOCALBIN)/.tmp-cdx/cyclonedx-gomod $(CYCLONEDX_GOMOD) && rm -rf $(LOCALBIN)/.tmp-cdx

.PHONY: helm
helm: $(HELM) ## Install helm 3 into bin/.
$(HELM):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN)/.tmp-helm go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/.tmp-helm/helm $(HELM) && rm -rf $(LOCALBIN)/.tmp-helm

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Install golangci-lint into bin/ (built from the Go module proxy).
$(GOLANGCI_LINT):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN)/.tmp-lint go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/.tmp-lint/golangci-lint $(GOLANGCI_LINT) && rm -rf $(LOCALBIN)/.tmp-lint

.PHONY: actionlint
actionlint: $(ACTIONLINT) ## Install actionlint into bin/ (built from the Go module proxy).
$(ACTIONLINT):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN)/.tmp-actionlint go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
	mv $(LOCALBIN)/.tmp-actionlint/actionlint $(ACTIONLINT) && rm -rf $(LOCALBIN)/.tmp-actionlint

.PHONY: helm4
helm4: $(HELM4) ## Install helm 4 into bin/.
$(HELM4):
	@mkdir -p $(LOCALBIN)
	GOBIN=$(LOCALBIN)/.tmp-helm4 go install helm.sh/helm/v4/cmd/helm@$(HELM4_VERSION)
	mv $(LOCALBIN)/.tmp-helm4/helm $(HELM4) && rm -rf $(LOCALBIN)/.tmp-helm4

# node-assets builds after envtest-assets: the two share most packages of
# k8s.io/kubernetes, which two builds side by side (make -j) would compile twice.
.PHONY: node-assets
node-assets: envtest-assets ## Build the node's binaries (kubelet, kube-proxy, kube-controller-manager, kube-scheduler) from the Go module proxy and fetch containerd, runc and the CNI plugins from Debian, into bin/node (cached).
	hack/node-binaries.sh $(NODE_ASSETS)
	CGO_ENABLED=0 go build $(GO_BUILD_FLAGS) -o $(NODE_ASSETS)/pause ./hack/cluster/pause

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver, etcd and kubectl from the Go module proxy into bin/k8s (cached).
	hack/control-plane-binaries.sh $(ENVTEST_ASSETS)

.PHONY: chromium
chromium: $(CHROMIUM) ## Unpack Debian's Chromium (CHROMIUM_VERSION) for the consent page's browser test.
$(CHROMIUM): hack/chromium.sh
	hack/chromium.sh "$(CHROMIUM_VERSION)" $(dir $(CHROMIUM))

.PHONY: ts-client
ts-client: $(TS_CLIENT)/node_modules/.package-lock.json ## Install the TypeScript MCP SDK client (hack/ts-client) for the second-opinion test.
$(TS_CLIENT)/node_modules/.package-lock.json: $(TS_CLIENT)/package-lock.json
	npm ci --prefix $(TS_CLIENT) --no-audit --no-fund
	@touch $@

.PHONY: inspector
inspector: $(INSPECTOR)/node_modules/.package-lock.json ## Install MCP Inspector (hack/inspector), whose CLI checks the tools' MCP Apps views.
$(INSPECTOR)/node_modules/.package-lock.json: $(INSPECTOR)/package-lock.json
	@# Not npm ci, which refuses this lock: vite's optional dependency
	@# napi-windows-process-start-time is not on the registry, so no lock can name it.
	@# npm install with the lock installs the versions it pins, and --no-save keeps it.
	npm install --prefix $(INSPECTOR) --no-save --no-audit --no-fund
	@touch $@

.PHONY: conformance
conformance: $(CONFORMANCE)/node_modules/.package-lock.json ## Install the MCP conformance suite (hack/conformance) for the end-to-end test.
$(CONFORMANCE)/node_modules/.package-lock.json: $(CONFORMANCE)/package-lock.json
	npm ci --prefix $(CONFORMANCE) --no-audit --no-fund
	@touch $@
