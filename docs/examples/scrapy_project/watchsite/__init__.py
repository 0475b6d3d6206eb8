"""An example Scrapy project that uses changewatch (docs/scrapy.md)."""
