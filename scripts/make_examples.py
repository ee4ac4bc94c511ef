"""Write the binary demo documents in examples/: the refund policy PDF and the shipping DOCX.

The Markdown and CSV examples are plain text and kept by hand next to them.
Run with ``.venv/bin/python scripts/make_examples.py``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import docx
from docx.document import Document
from reportlab.lib.pagesizes import LETTER
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.lib.units import inch
from reportlab.platypus import Flowable, PageBreak, Paragraph, SimpleDocTemplate, Spacer

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
COMPANY = "Northwind Outfitters"
# Fixed document dates so a re-run changes the files only when their content changes.
ISSUED = datetime(2025, 3, 1)

Section = tuple[str, list[str]]

REFUND_PAGES: list[list[Section]] = [
    [
        (
            "Our promise",
            [
                "Northwind Outfitters wants every jacket, tent and pair of boots you buy from us "
                "to earn its place in your pack. If something is not right, you may return it "
                "for a full refund under the terms below. This policy applies to orders placed "
                "on northwind-outfitters.example and by phone with our support team.",
            ],
        ),
        (
            "The 30-day refund window",
            [
                "You have 30 days from the date of delivery to request a refund. The delivery "
                "date is the one shown in the carrier's tracking record; for orders delivered "
                "in several parcels, the window starts when the last parcel arrives.",
                "Items must be unused, unwashed and returned with their original tags and "
                "packaging. Footwear must be tried on indoors only: boots with dirt or wear on "
                "the soles cannot be refunded, but remain covered by our two-year warranty if "
                "they are faulty.",
            ],
        ),
        (
            "How refunds are paid",
            [
                "Refunds are issued to the original payment method within 10 business days "
                "after the return reaches our returns centre and passes inspection. Returns go "
                "to Reno, Nevada, or, for orders from the United Kingdom and Europe, to "
                "Rotterdam, the Netherlands. Original shipping charges are refunded only when "
                "the item arrived damaged, was faulty, or was not what you ordered.",
                "Return shipping is free when we made a mistake. For any other return, the cost "
                "of the prepaid return label (USD 7.95 in the United States) is deducted from "
                "your refund. You may also use a carrier of your choice at your own cost.",
            ],
        ),
    ],
    [
        (
            "Exceptions",
            [
                "The following items cannot be returned for a refund: items marked Final Sale; "
                "gift cards; personalised or embroidered products; opened consumables such as "
                "fuel canisters, freeze-dried meals and water treatment tablets; and swimwear "
                "or base layers with the hygiene seal removed.",
                "Items returned after the 30-day window are not eligible for a refund. If an "
                "item develops a defect in materials or workmanship, please make a warranty "
                "claim instead: our warranty lasts two years from the date of delivery.",
                "Large items shipped by freight, such as kayaks and roof boxes, must be "
                "returned through a collection arranged by our support team.",
            ],
        ),
        (
            "How to request a refund",
            [
                "1. Visit the Returns Centre at northwind-outfitters.example/returns and enter "
                "your order number and the email address used for the order.",
                "2. Choose the items to return and the reason. You will receive a return "
                "authorisation (RMA) number and, where applicable, a prepaid label by email.",
                "3. Pack the items securely, write the RMA number on the outside of the parcel "
                "and send it within 14 days of receiving the RMA number.",
                "If you cannot use the Returns Centre, contact our support team by email at "
                "support@northwind-outfitters.example or by phone; opening hours for each "
                "region are listed in our support hours table. Please have your order number "
                "ready.",
            ],
        ),
    ],
]

SHIPPING_INTRO = [
    "Northwind Outfitters ships from two distribution centres: Reno, Nevada, for orders to "
    "North and Latin America and Asia-Pacific, and Rotterdam, the Netherlands, for orders to "
    "the United Kingdom and Europe.",
    "Orders placed before 2 pm Pacific Time on a business day (2 pm Central European Time for "
    "Rotterdam) leave the warehouse the same day. Orders placed later, or on weekends and "
    "public holidays, are processed within one to two business days.",
]

SHIPPING_SERVICES: list[tuple[str, ...]] = [
    ("Service", "Carrier", "Delivery time", "Cost"),
    ("Standard", "UPS Ground / USPS", "5-7 business days", "USD 6.95, free over USD 75"),
    ("Expedited", "UPS 2nd Day Air", "2-3 business days", "USD 14.95"),
    ("Overnight", "FedEx Priority Overnight", "1 business day", "USD 29.95"),
    ("Europe and UK", "DHL Parcel", "3-6 business days", "EUR 7.50, free over EUR 75"),
    ("International", "DHL Express", "7-14 business days", "from USD 24.95"),
]

SHIPPING_SECTIONS: list[Section] = [
    (
        "Tracking your parcel",
        [
            "A tracking link is emailed as soon as the carrier scans your parcel. The delivery "
            "date recorded by the carrier is the one we use for the 30-day refund window and "
            "for the start of the two-year warranty.",
        ],
    ),
    (
        "Customs and duties",
        [
            "Prices for the United Kingdom and the European Union include VAT and duties. For "
            "other international destinations, import duties and taxes are collected by the "
            "carrier on delivery and are not refunded if the order is returned.",
        ],
    ),
    (
        "Damaged or missing parcels",
        [
            "If a parcel arrives damaged or does not arrive within five business days of the "
            "latest estimated date, contact our support team. We will send a replacement or "
            "issue a refund, including the original shipping charge.",
        ],
    ),
]


def write_refund_policy(path: Path) -> None:
    styles = getSampleStyleSheet()
    story: list[Flowable] = [Paragraph(f"{COMPANY} Refund Policy", styles["Title"])]
    for number, page in enumerate(REFUND_PAGES):
        if number:
            story.append(PageBreak())
        for heading, paragraphs in page:
            story.append(Paragraph(heading, styles["Heading2"]))
            story.extend(Paragraph(text, styles["BodyText"]) for text in paragraphs)
            story.append(Spacer(1, 0.1 * inch))
    document = SimpleDocTemplate(
        str(path),
        pagesize=LETTER,
        title=f"{COMPANY} Refund Policy",
        author=COMPANY,
        subject="Customer policies",
        invariant=True,  # no creation date or random id: the same input gives the same bytes
    )
    document.build(story)


def write_shipping_guide(path: Path) -> None:
    document = docx.Document()
    properties = document.core_properties
    properties.title = f"{COMPANY} Shipping Guide"
    properties.author = properties.last_modified_by = COMPANY
    properties.created = properties.modified = ISSUED
    document.add_heading("Shipping Guide", level=1)
    for text in SHIPPING_INTRO:
        document.add_paragraph(text)
    document.add_heading("Services and delivery times", level=2)
    _add_table(document, SHIPPING_SERVICES)
    for heading, paragraphs in SHIPPING_SECTIONS:
        document.add_heading(heading, level=2)
        for text in paragraphs:
            document.add_paragraph(text)
    document.save(str(path))


def _add_table(document: Document, rows: list[tuple[str, ...]]) -> None:
    table = document.add_table(rows=len(rows), cols=len(rows[0]))
    table.style = "Light Grid Accent 1"
    for row, values in zip(table.rows, rows, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value


def main() -> None:
    EXAMPLES.mkdir(exist_ok=True)
    write_refund_policy(EXAMPLES / "refund-policy.pdf")
    write_shipping_guide(EXAMPLES / "shipping-guide.docx")


if __name__ == "__main__":
    main()
