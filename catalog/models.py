"""What the catalogue knows about one system, as pydantic models.

Every field holds only what the survey pages in ``shared/seeds/`` state, or,
for a system no seed names, what the one public page the entry cites states
(:attr:`System.source`: a paper, documentation or a repository); what that
page does not state stays empty (``None`` or an empty list), never a guess. An
entry names exactly one of the two: its ``seed`` or its ``source``.
The one field of our own is :attr:`System.relation`: how the system relates to
this workbench, written by us and labelled as such wherever it is shown.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

__all__ = ["Category", "Kind", "Mechanism", "LinkKind", "Link", "SourceKind", "Source", "System",
           "Catalog", "AREA_OF"]


class Category(str, Enum):
    """Where the survey pages file a system (their section headings); ``checkpoint-swap-migration``
    is ours, for systems no seed names that keep a workload's GPU state while it leaves the GPU."""

    RPC = "rpc"
    REMOTE_CUDA = "remote-cuda"
    INDUSTRIAL = "industrial-product"
    DATACENTER_POOLING = "datacenter-pooling"
    SERVERLESS = "serverless"
    TEMPORAL_SHARING = "temporal-sharing"
    SPATIAL_SHARING = "spatial-sharing"
    CHECKPOINT_SWAP_MIGRATION = "checkpoint-swap-migration"
    SURVEY = "survey"

    @property
    def label(self) -> str:
        return _CATEGORY_LABELS[self]


_CATEGORY_LABELS = {
    Category.RPC: "Disaggregation: RPC",
    Category.REMOTE_CUDA: "Disaggregation: remote CUDA",
    Category.INDUSTRIAL: "Disaggregation: industrial product",
    Category.DATACENTER_POOLING: "Disaggregation: datacenter-scale pooling",
    Category.SERVERLESS: "Disaggregation: serverless",
    Category.TEMPORAL_SHARING: "Sharing: temporal",
    Category.SPATIAL_SHARING: "Sharing: spatial",
    Category.CHECKPOINT_SWAP_MIGRATION: "Sharing: checkpoint, swap and migration",
    Category.SURVEY: "Survey",
}

#: The two areas of the survey.
AREA_OF = {
    Category.RPC: "disaggregation", Category.REMOTE_CUDA: "disaggregation",
    Category.INDUSTRIAL: "disaggregation", Category.DATACENTER_POOLING: "disaggregation",
    Category.SERVERLESS: "disaggregation", Category.TEMPORAL_SHARING: "sharing",
    Category.SPATIAL_SHARING: "sharing", Category.CHECKPOINT_SWAP_MIGRATION: "sharing",
    Category.SURVEY: "survey",
}


class Kind(str, Enum):
    """What sort of thing an entry is."""

    RESEARCH_SYSTEM = "research-system"
    PRODUCT = "product"
    HARDWARE_FEATURE = "hardware-feature"
    SURVEY = "survey"
    PAPER = "paper"


class Mechanism(str, Enum):
    """The controlled vocabulary of techniques; an entry lists only those its seed (or its
    cited public page) names."""

    API_INTERCEPTION = "api-interception"        # intercepting CUDA API calls or kernel launches
    API_REMOTING = "api-remoting"                # forwarding CUDA API calls to a remote GPU
    RPC = "rpc"                                  # GPU services offered as remote procedure calls
    SERVERLESS = "serverless"                    # GPUs for serverless functions
    KERNEL_PREEMPTION = "kernel-preemption"
    KERNEL_PADDING = "kernel-padding"            # REEF's dynamic kernel padding
    KERNEL_INSTRUMENTATION = "kernel-instrumentation"
    CO_LAUNCH = "kernel-co-launch"               # launching kernels of several tenants together
    TIME_SLICING = "time-slicing"
    FINE_GRAINED_ALLOCATION = "fine-grained-allocation"
    MPS = "mps"
    MIG = "mig"
    STREAMS = "streams"
    STREAM_PRIORITIES = "stream-priorities"
    KUBERNETES = "kubernetes"
    CONTAINERS = "containers"
    RATE_CONTROL = "rate-control"
    UNIFIED_MEMORY = "unified-memory"
    INTERFERENCE_AWARENESS = "interference-awareness"
    OPERATOR_SCHEDULING = "operator-scheduling"
    FRAMEWORK_INTEGRATION = "framework-integration"  # inside TensorFlow/PyTorch
    DYNAMIC_SCALING = "dynamic-scaling"
    CONFIGURATION_TUNING = "configuration-tuning"     # e.g. batch sizes of co-located jobs
    PCIE_AWARENESS = "pcie-awareness"
    PROFILING = "profiling"                      # Nsight Compute / Systems measurements
    SOFTWARE_SCHEDULING = "software-defined-scheduling"
    HARDWARE_PARTITIONING = "hardware-partitioning"
    PERFORMANCE_MODELING = "performance-modeling"
    CHECKPOINT_RESTORE = "checkpoint-restore"    # a program's GPU state saved, restored later
    MEMORY_SWAP = "memory-swap"                  # device memory moved to host memory and back
    MIGRATION = "migration"                      # a running job moved to other GPUs or hosts


class LinkKind(str, Enum):
    PAPER = "paper"
    CODE = "code"
    HOMEPAGE = "homepage"
    DOCS = "docs"
    ARTIFACT = "artifact"
    BENCHMARK = "benchmark"


class Link(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: LinkKind
    url: HttpUrl
    note: str | None = None  # e.g. "in Chinese"


class SourceKind(str, Enum):
    """What sort of public page an entry's facts come from."""

    PAPER = "paper"
    DOCUMENTATION = "documentation"
    REPOSITORY = "repository"


class Source(BaseModel):
    """The public page an entry's facts come from, for a system no seed names."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: SourceKind
    url: HttpUrl = Field(description="the exact page read, e.g. a repository's README at a commit")


class System(BaseModel):
    """One entry of the catalogue."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="stable identifier, e.g. 'reef'")
    name: str = Field(min_length=1, description="short name, e.g. 'REEF'")
    title: str | None = Field(None, description="full title of the paper or product page")
    venue: str | None = Field(None, description="venue as the seed (or source) writes it, "
                              "e.g. 'OSDI'")
    year: int | None = Field(None, ge=1990, le=2100)
    institutions: list[str] = Field(default_factory=list)
    authors: list[str] = Field(default_factory=list)
    category: Category
    kind: Kind
    mechanisms: list[Mechanism] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    code_public: bool | None = Field(None, description="True when a code link exists, False when "
                                     "the seed (or source) says there is none, None when unknown")
    ideas: list[str] = Field(default_factory=list, description="key ideas, in the seed's "
                             "(or source's) words")
    results: list[str] = Field(default_factory=list, description="headline results the seed "
                               "(or source) states")
    relation: str | None = Field(None, description="how it relates to gpu-workbench (our words)")
    identifiers: dict[str, str] = Field(default_factory=dict, description="doi, arxiv, ...")
    seed: str | None = Field(None, min_length=1,
                             description="the seed file the facts come from")
    source: Source | None = Field(None, description="the public page the facts come from, for a "
                                  "system no seed names")

    @field_validator("institutions", "authors", "ideas", "results")
    @classmethod
    def _no_blank_items(cls, items: list[str]) -> list[str]:
        if any(not item.strip() for item in items):
            raise ValueError("empty items are not allowed")
        return items

    @model_validator(mode="after")
    def _one_origin(self) -> "System":
        if (self.seed is None) == (self.source is None):
            raise ValueError("give exactly one of 'seed' (a survey page that names the system) "
                             "and 'source' (the public page the facts come from, for a system "
                             "no seed names)")
        return self

    @property
    def area(self) -> str:
        return AREA_OF[self.category]

    @property
    def origin(self) -> str:
        """Where the facts come from, in words: the seed file, or the cited page's kind and URL."""
        if self.source is not None:
            return f"{self.source.kind.value}: {self.source.url}"
        return f"seed: {self.seed}"

    def links_of(self, kind: LinkKind) -> list[Link]:
        return [link for link in self.links if link.kind == kind]


class Catalog(BaseModel):
    """The whole data file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = 1
    systems: list[System]

    @field_validator("systems")
    @classmethod
    def _unique_keys(cls, systems: list[System]) -> list[System]:
        keys = [s.key for s in systems]
        duplicates = {k for k in keys if keys.count(k) > 1}
        if duplicates:
            raise ValueError(f"duplicate keys: {sorted(duplicates)}")
        return systems
