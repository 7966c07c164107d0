r"""Figures of SOCM by pair kind and by length (notebooks 7 and 8), over :mod:`socm_lib.downstream` frames."""

from __future__ import annotations

import matplotlib.pyplot as plt


def plot_by_kind(frames: dict, order, column: str = "socm"):
    """Box plots of ``column`` per pair kind, one panel per encoder (``frames``: name -> frame with ``kind``)."""
    fig, axes = plt.subplots(1, len(frames), figsize=(5.5 * len(frames), 4.2), sharey=True, squeeze=False)
    for ax, (name, df) in zip(axes[0], frames.items()):
        ax.boxplot([df.loc[df["kind"] == k, column].to_numpy() for k in order], showmeans=True)
        ax.set_xticks(range(1, len(order) + 1), [k.replace("_", "\n") for k in order], fontsize=7)
        ax.set_title(name)
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_ylabel(column.replace("_", " "))
    fig.tight_layout()
    return fig


def plot_dmu_dsigma(frames: dict, order):
    r"""Scatter of :math:`d_\mu` against :math:`d_\Sigma`, one colour per kind, kind means as large markers."""
    fig, axes = plt.subplots(1, len(frames), figsize=(5.5 * len(frames), 4.5), squeeze=False)
    colours = plt.get_cmap("tab10")
    for ax, (name, df) in zip(axes[0], frames.items()):
        for c, kind in enumerate(order):
            sub = df[df["kind"] == kind]
            ax.scatter(sub["d_mu"], sub["d_sigma"], s=10, alpha=0.45, color=colours(c))
            ax.scatter(sub["d_mu"].mean(), sub["d_sigma"].mean(), s=110, marker="D", color=colours(c),
                       edgecolor="black", label=kind)
        ax.set_xlabel(r"$d_\mu$")
        ax.set_ylabel(r"$d_\Sigma$")
        ax.set_title(name)
        ax.grid(alpha=0.3)
    axes[0, -1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def plot_lines(panels):
    """Line plots side by side; ``panels`` is a list of ``(xlabel, ylabel, {name: (x, y)})``, one line per name."""
    fig, axes = plt.subplots(1, len(panels), figsize=(4.8 * len(panels), 3.8), squeeze=False)
    for ax, (xlabel, ylabel, lines) in zip(axes[0], panels):
        for name, (x, y) in lines.items():
            ax.plot(x, y, marker="o", label=name)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig
