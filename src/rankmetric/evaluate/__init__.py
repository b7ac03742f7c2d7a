"""rankmetric.evaluate"""
